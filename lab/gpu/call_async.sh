#!/usr/bin/env bash
# One GPU call (issue 43): cuda-safe-async beside NVIDIA's cuda-async 0.5.0 and
# bench/floors/async_floor.c, in one job. Run from the repository root with target/
# gpu-bundle.tar.gz (`cargo xtask gpu-bundle`, cuda-13's completion, completion_threads and
# inference_server at least) and target/cuda-async-bench/ (lab/cuda_async/build.sh) carried.
#
# 3 rounds; in each, alternating ours and theirs: the floor, ours completion, theirs
# completion, ours threads, theirs threads, ours server, theirs server. Pinned as
# bench/run_benchmarks.sh pins: one core (2) for the floor and the completion programs, cores
# 2-9 for the threads programs, and for the servers (both sides, whose 2 tokio workers and
# 1,000 blocking threads the one core would not fit). Every program under its own timeout, all
# of them within a deadline that keeps the script under 540 s. Writes $OUT/bench.log (the
# sections as the runner writes them: `=== floor:NAME round N ===`, `=== ours:ABI/NAME round
# N ===`, `=== theirs:cuda-async/NAME round N ===`) and $OUT/table.txt, the side-by-side table.
export NCCL_NVLS_ENABLE=0
set -u
repo=$(pwd)
theirs=$repo/target/cuda-async-bench
out=${OUT:?set OUT to the folder for the logs}
rounds=${ROUNDS:-3}
# Seconds from the start after which no program is started; each one's own timeout is cut to
# what is left before it.
deadline=$((SECONDS + ${DEADLINE:-500}))
[ -x "$theirs/cuda_async_completion" ] || {
    echo "no $theirs/cuda_async_completion: run lab/cuda_async/build.sh first" >&2
    exit 1
}
tar -xzf target/gpu-bundle.tar.gz -C /tmp && cd /tmp/gpu-bundle || exit 1
ours=/tmp/gpu-bundle/cuda-13
log=$out/bench.log
: >"$log"
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader | tee "$out/gpu.txt"

one=()
several=()
if command -v taskset >/dev/null; then
    one=(taskset -c 2)
    several=(taskset -c 2-9)
fi

floor=/tmp/async-floor
bash bench/floors/build.sh "$floor" async_floor >"$out/floor_build.txt" 2>&1
cat "$out/floor_build.txt"

# item KIND NAME LIMIT PIN... -- PROGRAM ARGS...: one section of the log, the program run under
# the pinning and under `timeout` (LIMIT seconds, or what is left before the deadline).
item() {
    local kind=$1 name=$2 limit=$3
    shift 3
    local pin=()
    while [ "$1" != -- ]; do
        pin+=("$1")
        shift
    done
    shift
    local left=$((deadline - SECONDS))
    if [ "$left" -lt 10 ]; then
        echo "!!! skipped $kind:$name round $round: the deadline" | tee -a "$log"
        return
    fi
    [ "$left" -lt "$limit" ] && limit=$left
    echo "=== $kind:$name round $round ===" >>"$log"
    timeout "$limit" "${pin[@]}" "$@" >>"$log" 2>&1 || echo "!!! exit $? ($kind:$name round $round)" | tee -a "$log"
}

for round in $(seq 1 "$rounds"); do
    echo "round $round at ${SECONDS}s"
    [ -x "$floor/async_floor" ] && item floor async_floor 30 "${one[@]}" -- "$floor/async_floor"
    item ours cuda-13/completion 60 "${one[@]}" -- "$ours/benches/completion"
    item theirs cuda-async/cuda_async_completion 60 "${one[@]}" -- "$theirs/cuda_async_completion"
    item ours cuda-13/completion_threads 60 "${several[@]}" -- "$ours/benches/completion_threads"
    item theirs cuda-async/cuda_async_threads 60 "${several[@]}" -- "$theirs/cuda_async_threads"
    item ours cuda-13/inference_server 90 "${several[@]}" -- "$ours/examples/inference_server"
    item theirs cuda-async/cuda_async_server 90 "${several[@]}" -- "$theirs/cuda_async_server"
done
echo "done at ${SECONDS}s"
grep -h '^error\|^!!!' "$log" | sort | uniq -c | head -20
python3 "$repo/lab/gpu/call_async_table.py" "$log" | tee "$out/table.txt"
