#!/usr/bin/env bash
# Written by `cargo xtask gpu-bundle`; rebuild the bundle rather than editing this copy.
#
# Runs the bundled GPU tests, examples and benchmarks of each CUDA ABI on a GPU machine (no Rust
# needed), with CUDA_SAFE_REQUIRE_GPU=1 so that a test without a GPU fails instead of being
# reported as ignored.
#
# usage: bash run.sh [FILTER]
#   FILTER               run only the items whose "abi/kind/name" contains FILTER
# environment:
#   OUT                  folder for run.log and summary.txt (default: logs/ beside this script)
#   TEST_THREADS         --test-threads for the test binaries (default 1)
#   SANITIZE=1           run the test binaries under compute-sanitizer memcheck
#   RUN_BENCHES=1        run the benchmarks too (they are skipped otherwise; the diagnostics,
#                        diag_*, never: they take arguments)
#   RUN_FLOOR=1          run the C floors too: bench/driver_floor (driver API) and
#                        bench/nvml_floor (NVML getters)
#   EXAMPLE_ARGS_<name>  extra arguments for example <name>, split on blanks (defaults: monitor
#                        takes 5 samples, bandwidth sweeps up to 64 MiB and draws into the log
#                        folder; set the variable, even empty, to change that)
#   ITEM_TIMEOUT         seconds one item may run before it is stopped and failed (default 300;
#                        0: no limit)
set -u

# Inner mode, what SANITIZE=1 runs each test binary with: `run.sh --sanitize COMMAND [ARG...]`
# runs COMMAND under compute-sanitizer memcheck ($SANITIZER) and fails when the sanitizer finds
# an error or COMMAND fails. COMMAND's own exit code is recorded beside it because, for a
# program that never calls CUDA, the sanitizer exits 0 whatever the program did. Failed API
# calls are not counted as sanitizer errors: the tests provoke them on purpose (an allocation
# past a pool's limit) and assert on each one; memory-access errors are.
if [ "${1:-}" = --sanitize ]; then
    shift
    rcfile=$(mktemp) || exit 2
    # The inner script expands its own arguments, so it is single-quoted on purpose.
    # shellcheck disable=SC2016
    "$SANITIZER" --tool memcheck --error-exitcode 99 --require-cuda-init no \
        --report-api-errors no \
        bash -c '"${@:2}"; rc=$?; echo "$rc" >"$1"; exit "$rc"' record-exit "$rcfile" "$@"
    rc=$?
    app_rc=$(cat "$rcfile" 2>/dev/null)
    rm -f "$rcfile"
    if [ "$rc" -eq 0 ]; then rc=${app_rc:-1}; fi
    exit "$rc"
fi

filter=${1:-}
bundle_dir=$(cd "$(dirname "$0")" && pwd) || exit 2
logdir=${OUT:-$bundle_dir/logs}
mkdir -p "$logdir" && logdir=$(cd "$logdir" && pwd) || exit 2
cd "$bundle_dir" || exit 2
log=$logdir/run.log
summary=$logdir/summary.txt
: >"$log" || exit 2
export CUDA_SAFE_REQUIRE_GPU=1
item_timeout=${ITEM_TIMEOUT:-300}

# say TEXT...: print a line to stdout and to the log.
say() { printf '%s\n' "$*" | tee -a "$log"; }

# find_tool NAME: print the path of NAME, from PATH or /usr/local/cuda/bin.
find_tool() {
    command -v "$1" 2>/dev/null && return 0
    [ -x "/usr/local/cuda/bin/$1" ] || return 1
    printf '%s\n' "/usr/local/cuda/bin/$1"
}

say "gpu-bundle run: $(date '+%Y-%m-%d %H:%M:%S %Z') on $(hostname)"
[ -f MANIFEST.txt ] && say "bundle: $(grep -E '^(commit|dirty):' MANIFEST.txt | paste -sd ' ' -)"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 |
        sed 's/^/gpu: /' | tee -a "$log"
else
    say "gpu: nvidia-smi not found"
fi
if nvcc=$(find_tool nvcc); then
    say "nvcc: $("$nvcc" --version | tail -1)"
else
    say "nvcc: not found"
fi

sanitizer=()
if [ "${SANITIZE:-0}" = 1 ]; then
    if SANITIZER=$(find_tool compute-sanitizer); then
        export SANITIZER
        sanitizer=(bash "$bundle_dir/run.sh" --sanitize)
        say "sanitizer: $SANITIZER --tool memcheck on the test binaries"
    else
        say "SANITIZE=1 but compute-sanitizer is in neither PATH nor /usr/local/cuda/bin"
        exit 2
    fi
fi

floor=""
if [ -f bench/driver_floor.c ]; then
    if command -v gcc >/dev/null 2>&1 && [ -d /usr/local/cuda ]; then
        floor_bin=${TMPDIR:-/tmp}/driver_floor
        # build_floor [GCC ARG...]: compile the floor; gcc's messages go to stdout and the log.
        build_floor() {
            gcc -O2 -o "$floor_bin" bench/driver_floor.c -I/usr/local/cuda/include \
                -L/usr/local/cuda/lib64 "$@" -lcuda -lnvrtc -lpthread -lm 2>&1 | tee -a "$log"
            return "${PIPESTATUS[0]}"
        }
        if build_floor || build_floor -L/usr/lib/x86_64-linux-gnu ||
            build_floor -L/usr/local/cuda/lib64/stubs; then
            floor=$floor_bin
            say "driver floor: built $floor (RUN_FLOOR=1 runs it)"
        else
            say "driver floor: build FAILED (gcc's messages are above)"
        fi
    else
        say "driver floor: not built (needs gcc and /usr/local/cuda)"
    fi
fi

nvml_floor=""
if [ -f bench/nvml_floor.c ]; then
    if command -v gcc >/dev/null 2>&1 && [ -d /usr/local/cuda ]; then
        nvml_floor_bin=${TMPDIR:-/tmp}/nvml_floor
        # build_nvml_floor GCC ARG...: compile the NVML floor; gcc's messages go to stdout and
        # the log.
        build_nvml_floor() {
            gcc -O2 -o "$nvml_floor_bin" bench/nvml_floor.c -I/usr/local/cuda/include "$@" 2>&1 |
                tee -a "$log"
            return "${PIPESTATUS[0]}"
        }
        if build_nvml_floor -lnvidia-ml || build_nvml_floor -l:libnvidia-ml.so.1 ||
            build_nvml_floor -L/usr/local/cuda/lib64/stubs -lnvidia-ml; then
            nvml_floor=$nvml_floor_bin
            say "nvml floor: built $nvml_floor (RUN_FLOOR=1 runs it)"
        else
            say "nvml floor: build FAILED (gcc's messages are above)"
        fi
    else
        say "nvml floor: not built (needs gcc and /usr/local/cuda)"
    fi
fi

passed=0
failed=0
skipped=0
results=()

# selected LABEL: whether LABEL passes the filter (every label does when there is none).
selected() {
    case $1 in *"$filter"*) return 0 ;; *) return 1 ;; esac
}

# record STATUS SECONDS LABEL: count one item and add its row to the summary.
record() {
    if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    results+=("$(printf '%-4s %9s  %s' "$1" "$2" "$3")")
}

# run_item LABEL COMMAND [ARG...]: run one item, its output to stdout and the log, and record it.
run_item() {
    local label=$1 start end rc secs status
    shift
    say ""
    say "=== $label ==="
    say "\$ $*"
    start=$(date +%s%N)
    if [ "$item_timeout" != 0 ] && command -v timeout >/dev/null 2>&1; then
        timeout --kill-after=10 "$item_timeout" "$@" </dev/null 2>&1 | tee -a "$log"
    else
        "$@" </dev/null 2>&1 | tee -a "$log"
    fi
    rc=${PIPESTATUS[0]}
    end=$(date +%s%N)
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    if [ "$rc" -eq 0 ]; then status=PASS; else status=FAIL; fi
    if [ "$rc" -eq 124 ]; then say "(stopped after ${item_timeout}s: ITEM_TIMEOUT)"; fi
    say "=== $label: $status (exit $rc, ${secs}s) ==="
    record "$status" "$secs" "$label"
}

# Examples that would run until interrupted, or for long, get bounded arguments by default.
: "${EXAMPLE_ARGS_monitor=-c 5}"
: "${EXAMPLE_ARGS_bandwidth=--max-mib 64 --svg $logdir/bandwidth.svg}"

for abi in cuda-12 cuda-13; do
    for kind in tests examples benches; do
        for bin in "$abi/$kind"/*; do
            [ -f "$bin" ] || continue
            selected "$bin" || continue
            name=${bin##*/}
            case $kind in
            tests)
                run_item "$bin" ${sanitizer[@]+"${sanitizer[@]}"} "./$bin" \
                    "--test-threads=${TEST_THREADS:-1}"
                ;;
            examples)
                var=EXAMPLE_ARGS_${name//[^A-Za-z0-9_]/_}
                # The extra arguments are split on blanks on purpose.
                # shellcheck disable=SC2086
                run_item "$bin" "./$bin" ${!var:-}
                ;;
            benches)
                # The diagnostics (diag_*) take arguments and never run here:
                # bench/diag/README.md.
                [[ $name == diag_* ]] && continue
                if [ "${RUN_BENCHES:-0}" = 1 ]; then
                    run_item "$bin" "./$bin"
                else
                    skipped=$((skipped + 1))
                fi
                ;;
            esac
        done
    done
done

if [ "${RUN_FLOOR:-0}" = 1 ]; then
    if selected bench/driver_floor; then
        if [ -n "$floor" ]; then
            run_item bench/driver_floor "$floor"
        else
            say "RUN_FLOOR=1 but bench/driver_floor was not built"
            record FAIL 0.00 bench/driver_floor
        fi
    fi
    if selected bench/nvml_floor; then
        if [ -n "$nvml_floor" ]; then
            run_item bench/nvml_floor "$nvml_floor"
        elif [ -f bench/nvml_floor.c ]; then
            say "RUN_FLOOR=1 but bench/nvml_floor was not built"
            record FAIL 0.00 bench/nvml_floor
        fi
    fi
fi

{
    printf '%-4s %9s  %s\n' result seconds item
    if [ "${#results[@]}" -gt 0 ]; then printf '%s\n' "${results[@]}"; fi
    if [ "$skipped" -gt 0 ]; then echo "($skipped benchmarks not run: RUN_BENCHES=1 runs them)"; fi
    echo "$passed passed, $failed failed"
} >"$summary"
say ""
say "=== summary ==="
tee -a "$log" <"$summary"
if [ $((passed + failed)) -eq 0 ]; then
    say "nothing ran${filter:+ (filter: $filter)}"
    exit 1
fi
[ "$failed" -eq 0 ]
