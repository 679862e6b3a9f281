#!/usr/bin/env bash
# One GPU call with what matters most, in order, under 580 s: every bundled GPU test and
# example (both ABIs); cuda-safe-async beside cuda-async 0.5.0 and async_floor.c (one round);
# memcheck of the composed tests (cuda-13); the graph arena benchmark beside its floors
# (cuda-13, one round). Needs target/gpu-bundle.tar.gz and target/cuda-async-bench/ carried.
# Writes under $OUT (what a cut-off call wrote so far still comes back).
export NCCL_NVLS_ENABLE=0
set -u
repo=$(pwd)
tar -xzf target/gpu-bundle.tar.gz -C /tmp || exit 1
cd /tmp/gpu-bundle || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
ITEM_TIMEOUT=45 RUN_BENCHES=0 RUN_FLOOR=0 OUT=$OUT/t timeout 250 bash run.sh >"$OUT/tests_stdout.txt" 2>&1
grep -E "^(FAIL|SKIP)|passed|failed" "$OUT/t/summary.txt" | tail -30
mkdir -p "$OUT/async"
(cd "$repo" && ROUNDS=1 DEADLINE=140 OUT=$OUT/async timeout 160 bash lab/gpu/call_async.sh)
SANITIZE=1 ITEM_TIMEOUT=80 RUN_BENCHES=0 RUN_FLOOR=0 OUT=$OUT/s_composed timeout 85 bash run.sh cuda-13/tests/composed >"$OUT/sanitize_composed.txt" 2>&1
tail -2 "$OUT/s_composed/summary.txt"
ABIS=cuda-13 OUT=$OUT/graph FLOORS="graph_floor graph_arena_floor" BENCH_EXAMPLES="" \
    timeout 70 bash bench/run_benchmarks.sh 1 graph_arena >"$OUT/graph_stdout.txt" 2>&1
tail -20 "$OUT/graph_stdout.txt"
