#!/usr/bin/env bash
# One GPU call, under 580 s: the graph arena and graph benchmarks beside graph_arena_floor.c and
# graph_floor.c, the cuDNN benchmark beside dnn_graph_floor.c (cuda-13, one round each), then
# cuda-safe-async beside NVIDIA's cuda-async 0.5.0 and async_floor.c (lab/gpu/call_async.sh,
# 2 rounds). Needs target/gpu-bundle.tar.gz and target/cuda-async-bench/ carried. Writes under
# $OUT.
export NCCL_NVLS_ENABLE=0
set -u
repo=$(pwd)
[ -d /tmp/gpu-bundle ] || tar -xzf target/gpu-bundle.tar.gz -C /tmp
(
    cd /tmp/gpu-bundle || exit 1
    ABIS=cuda-13 OUT=$OUT/graph FLOORS="graph_floor graph_arena_floor" BENCH_EXAMPLES="" \
        timeout 110 bash bench/run_benchmarks.sh 1 graph >"$OUT/graph_stdout.txt" 2>&1
    tail -25 "$OUT/graph_stdout.txt"
    ABIS=cuda-13 OUT=$OUT/dnn FLOORS="dnn_graph_floor" BENCH_EXAMPLES="" \
        timeout 110 bash bench/run_benchmarks.sh 1 dnn >"$OUT/dnn_stdout.txt" 2>&1
    tail -25 "$OUT/dnn_stdout.txt"
)
mkdir -p "$OUT/async"
cd "$repo" && ROUNDS=2 DEADLINE=300 OUT=$OUT/async timeout 340 bash lab/gpu/call_async.sh
