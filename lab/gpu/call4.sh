#!/usr/bin/env bash
# One GPU call: the graph arena and graph benchmarks beside graph_arena_floor.c and
# graph_floor.c, the cuDNN benchmark beside dnn_graph_floor.c and libs_floor.c, the
# completion benchmarks beside async_floor.c, the launch A/B. Writes under $OUT.
export NCCL_NVLS_ENABLE=0
set -u
[ -d /tmp/gpu-bundle ] || tar -xzf target/gpu-bundle.tar.gz -C /tmp
cd /tmp/gpu-bundle || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader | tee "$OUT/gpu4.txt"
OUT=$OUT/graph FLOORS="graph_floor graph_arena_floor" BENCH_EXAMPLES="" timeout 170 bash bench/run_benchmarks.sh 3 graph_arena,/graph >"$OUT/graph_stdout.txt" 2>&1
tail -30 "$OUT/graph_stdout.txt"
OUT=$OUT/dnn FLOORS="dnn_graph_floor" BENCH_EXAMPLES="" timeout 150 bash bench/run_benchmarks.sh 2 cuda-13/benches/dnn >"$OUT/dnn_stdout.txt" 2>&1
tail -30 "$OUT/dnn_stdout.txt"
OUT=$OUT/async FLOORS="async_floor" BENCH_EXAMPLES="" timeout 170 bash bench/run_benchmarks.sh 2 completion >"$OUT/async_stdout.txt" 2>&1
tail -30 "$OUT/async_stdout.txt"
for abi in cuda-12 cuda-13; do
    echo "== $abi diag_launch_ab"
    timeout 40 taskset -c 2 "./$abi/benches/diag_launch_ab" 9 2>&1 | tail -8
done >"$OUT/launch_ab.txt" 2>&1
cat "$OUT/launch_ab.txt"
