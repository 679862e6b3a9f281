#!/usr/bin/env bash
# Written by `cargo xtask gpu-bundle`; rebuild the bundle rather than editing this copy.
#
# Runs everything the bundle holds on a GPU machine (no Rust needed), in one go: for each CUDA
# ABI the GPU tests (one item per test file, each in a process of its own), the examples and
# the benchmarks, then the C floors. The tests run with CUDA_SAFE_REQUIRE_GPU=1, so that a test
# without a GPU fails instead of being reported as ignored. Writes run.log and summary.txt.
#
# usage: bash run.sh [FILTER]
#   FILTER               run only the items whose name contains FILTER: a test file is
#                        "cuda-12/tests/graph", an example "cuda-13/examples/saxpy", a benchmark
#                        "cuda-12/benches/launch", a floor "bench/floors/driver_floor" (so
#                        "tests/graph" runs the graph tests of both ABIs, "graph" those and the
#                        graph examples, benchmarks and floor)
# environment:
#   OUT                  folder for run.log and summary.txt (default: logs/ beside this script)
#   TEST_THREADS         --test-threads for the test binaries (default 1)
#   TEST_ARGS            more arguments for the test binaries, split on blanks (a libtest
#                        filter such as "capture::" runs only the tests whose name has it)
#   SANITIZE=1           run the test binaries under compute-sanitizer memcheck
#   RUN_BENCHES=0        leave the benchmarks out (they run by default; the diagnostics,
#                        diag_*, bundled with --lab, never: they take arguments)
#   RUN_FLOOR=0          leave the C floors out (by default bench/floors/build.sh builds them
#                        and each runs as an item)
#   EXAMPLE_ARGS_<name>  extra arguments for example <name>, split on blanks (defaults: monitor
#                        takes 5 samples, bandwidth sweeps up to 64 MiB and draws into the log
#                        folder; set the variable, even empty, to change that)
#   ITEM_TIMEOUT         seconds one item may run before it is stopped and failed (default 300;
#                        0: no limit)
set -u
# NVLink multicast stays off: a rule of our GPU machines, not of the library.
export NCCL_NVLS_ENABLE=0

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

passed=0
failed=0
skipped=0
skipped=0
results=()

# selected LABEL: whether LABEL passes the filter (every label does when there is none).
selected() {
    case $1 in *"$filter"*) return 0 ;; *) return 1 ;; esac
}

# record STATUS SECONDS LABEL: count one item and add its row to the summary.
record() {
    case $1 in
    PASS) passed=$((passed + 1)) ;;
    SKIP) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)) ;;
    esac
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
    # Exit 77 (the automake convention): the item cannot run on this machine (an example
    # that needs two GPUs on one), said in its own output; not a failure.
    case $rc in
    0) status=PASS ;;
    77) status=SKIP ;;
    *) status=FAIL ;;
    esac
    if [ "$rc" -eq 124 ]; then say "(stopped after ${item_timeout}s: ITEM_TIMEOUT)"; fi
    say "=== $label: $status (exit $rc, ${secs}s) ==="
    record "$status" "$secs" "$label"
}

# Examples that would run until interrupted, or for long, get bounded arguments by default.
: "${EXAMPLE_ARGS_monitor=-c 5}"
: "${EXAMPLE_ARGS_bandwidth=--max-mib 64 --svg $logdir/bandwidth.svg}"

# run_tests ABI BINARY: run a test binary of ABI, one item per test file when BINARY.files lists
# them (each with CUDA_GPU_TESTS_FILE naming it), else as one item.
run_tests() {
    local abi=$1 bin=$2 file label files=()
    # TEST_ARGS is split on blanks on purpose.
    # shellcheck disable=SC2206
    local args=("--test-threads=${TEST_THREADS:-1}" ${TEST_ARGS:-})
    if [ ! -f "$bin.files" ]; then
        selected "$bin" || return 0
        run_item "$bin" ${sanitizer[@]+"${sanitizer[@]}"} "./$bin" "${args[@]}"
        return 0
    fi
    mapfile -t files <"$bin.files"
    for file in "${files[@]}"; do
        [ -n "$file" ] || continue
        label=$abi/tests/$file
        selected "$label" || continue
        run_item "$label" env CUDA_GPU_TESTS_FILE="$file" \
            ${sanitizer[@]+"${sanitizer[@]}"} "./$bin" "${args[@]}"
    done
}

for abi in cuda-12 cuda-13; do
    for kind in tests examples benches; do
        for bin in "$abi/$kind"/*; do
            { [ -f "$bin" ] && [ -x "$bin" ]; } || continue
            name=${bin##*/}
            case $kind in
            tests)
                run_tests "$abi" "$bin"
                ;;
            examples)
                selected "$bin" || continue
                var=EXAMPLE_ARGS_${name//[^A-Za-z0-9_]/_}
                # The extra arguments are split on blanks on purpose.
                # shellcheck disable=SC2086
                run_item "$bin" "./$bin" ${!var:-}
                ;;
            benches)
                # The diagnostics (diag_*, bundled with --lab) take arguments: never run here.
                [[ $name == diag_* ]] && continue
                selected "$bin" || continue
                if [ "${RUN_BENCHES:-1}" = 1 ]; then
                    run_item "$bin" "./$bin"
                else
                    skipped=$((skipped + 1))
                fi
                ;;
            esac
        done
    done
done

# The C floors chosen, built by bench/floors/build.sh (its lines and gcc's messages go to stdout
# and the log), each an item; one that could not be built fails.
floors=()
if [ "${RUN_FLOOR:-1}" = 1 ]; then
    for src in bench/floors/*_floor.c; do
        [ -f "$src" ] && selected "${src%.c}" && floors+=("$(basename "$src" .c)")
    done
fi
if [ "${#floors[@]}" -gt 0 ]; then
    floor_dir=""
    say ""
    if command -v gcc >/dev/null 2>&1 && [ -d /usr/local/cuda ]; then
        floor_dir=$(mktemp -d "${TMPDIR:-/tmp}/floors.XXXXXX") || exit 2
        bash bench/floors/build.sh "$floor_dir" "${floors[@]}" 2>&1 | sed 's/^/floors: /' |
            tee -a "$log"
    else
        say "floors: not built (needs gcc and /usr/local/cuda)"
    fi
    for name in "${floors[@]}"; do
        if [ -n "$floor_dir" ] && [ -x "$floor_dir/$name" ]; then
            run_item "bench/floors/$name" "$floor_dir/$name"
        else
            say "bench/floors/$name: not built"
            record FAIL 0.00 "bench/floors/$name (not built)"
        fi
    done
    if [ -n "$floor_dir" ]; then rm -rf "$floor_dir"; fi
fi

{
    printf '%-4s %9s  %s\n' result seconds item
    if [ "${#results[@]}" -gt 0 ]; then printf '%s\n' "${results[@]}"; fi
    if [ "$skipped" -gt 0 ]; then echo "($skipped benchmarks left out: RUN_BENCHES=0)"; fi
    echo "$passed passed, $failed failed, $skipped skipped (exit 77: not for this machine)"
} >"$summary"
say ""
say "=== summary ==="
tee -a "$log" <"$summary"
if [ $((passed + failed)) -eq 0 ]; then
    say "nothing ran${filter:+ (filter: $filter)}"
    exit 1
fi
[ "$failed" -eq 0 ]
