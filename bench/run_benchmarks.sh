#!/usr/bin/env bash
# Runs every C floor (bench/*_floor.c) and every bundled Rust benchmark (cuda-*/benches/*, but
# not the diagnostics, diag_*, which take arguments: bench/diag/README.md) in alternating
# rounds in one job, then prints one comparison table (and bench.json).
#
# usage (on the GPU machine, from anywhere): bash <bundle>/bench/run_benchmarks.sh [ROUNDS] [FILTER]
#   ROUNDS  rounds of every program (default 5); medians and per-round ratios are reported
#   FILTER  only Rust benchmarks whose "abi/name" contains FILTER, or one of its comma-separated
#           parts ("peer_copy,ipc_pool"); floors always run (FLOORS selects them)
# environment: OUT (folder for bench.log, bench.json, bench-table.txt; default logs/ in the
# bundle), FLOORS (only these floors, by name without .c: "multi_gpu_floor nccl_floor"; default
# all), ABIS (default "cuda-12 cuda-13"), BENCH_EXAMPLES (examples that print FIG lines and
# run in the rounds too; default "green_isolation allreduce"), BENCH_CPU (the core every program is pinned to,
# so that floor and crate run alike; default 2; empty: no pinning), THREAD_CPUS (the cores the
# multi-threaded programs, those named *threads*, are pinned to instead; default 2-9).
set -u
here=$(cd "$(dirname "$0")" && pwd) || exit 2
bundle=$(dirname "$here")
out=${OUT:-$bundle/logs}
mkdir -p "$out" || exit 2
log=$out/bench.log
: >"$log"
rounds=${1:-5}
filter=${2:-}
tmp=$(mktemp -d)
cuda=/usr/local/cuda
pin=()
threads_pin=()
cpu=${BENCH_CPU-2}
thread_cpus=${THREAD_CPUS-2-9}
if command -v taskset >/dev/null; then
    [ -n "$cpu" ] && pin=(taskset -c "$cpu")
    [ -n "$thread_cpus" ] && threads_pin=(taskset -c "$thread_cpus")
fi

# run_one PROGRAM: runs PROGRAM (at most 300 s) under its pinning, the threads programs on
# several cores, appending its output to the log.
run_one() {
    local prefix=("${pin[@]}")
    case "$(basename "$1")" in
        *threads*) prefix=("${threads_pin[@]}") ;;
    esac
    timeout 300 "${prefix[@]}" "$1" >>"$log" 2>&1 || echo "!!! exit $?" >>"$log"
}

# matches_filter ITEM: whether ITEM contains one of FILTER's comma-separated parts.
matches_filter() {
    local part
    local -a parts
    IFS=, read -ra parts <<<"$filter"
    for part in "${parts[@]}"; do
        [ -n "$part" ] && [[ "$1" == *"$part"* ]] && return 0
    done
    return 1
}

floors=()
for src in "$here"/*_floor.c; do
    [ -f "$src" ] || continue
    name=$(basename "$src" .c)
    [ -n "${FLOORS:-}" ] && [[ " $FLOORS " != *" $name "* ]] && continue
    libs="-lcuda -lnvrtc -lpthread -lm"
    grep -q '<nvml.h>' "$src" && libs="$libs -l:libnvidia-ml.so.1"
    # NCCL's floor calls the runtime and NCCL (installed system-wide where it runs).
    grep -q '<nccl.h>' "$src" && libs="$libs -lcudart -lnccl"
    # The BLAS floor calls cuBLAS, cuBLASLt and cuRAND; their headers reach CCCL's nv/target.
    grep -q '<cublas_v2.h>' "$src" && libs="$libs -lcublas -lcublasLt -lcurand -I$cuda/include/cccl"
    # shellcheck disable=SC2086
    if gcc -O2 -o "$tmp/$name" "$src" -I$cuda/include -L$cuda/lib64 -L$cuda/lib64/stubs $libs \
        >>"$log" 2>&1; then
        floors+=("$tmp/$name")
    else
        echo "could not build $name (see $log)"
    fi
done

benches=()
for abi in ${ABIS:-cuda-12 cuda-13}; do
    for bin in "$bundle/$abi"/benches/* ${BENCH_EXAMPLES-green_isolation allreduce}; do
        case "$bin" in */*) ;; *) bin="$bundle/$abi/examples/$bin" ;; esac
        [ -x "$bin" ] || continue
        [[ $(basename "$bin") == diag_* ]] && continue
        item="$abi/$(basename "$bin")"
        [ -n "$filter" ] && ! matches_filter "$item" && continue
        benches+=("$bin")
    done
done

echo "floors: ${floors[*]##*/}; benchmarks: ${#benches[@]}; rounds: $rounds; pinned: ${pin[*]:-no} (threads: ${threads_pin[*]:-no})"
for round in $(seq 1 "$rounds"); do
    for floor in "${floors[@]}"; do
        echo "=== floor:$(basename "$floor") round $round ===" >>"$log"
        run_one "$floor"
    done
    for bin in "${benches[@]}"; do
        abi=$(basename "$(dirname "$(dirname "$bin")")")
        echo "=== ours:$abi/$(basename "$bin") round $round ===" >>"$log"
        run_one "$bin"
    done
done
python3 "$here/compare.py" "$log" --json "$out/bench.json" | tee "$out/bench-table.txt"
rm -rf "$tmp"
