#!/usr/bin/env bash
# One GPU call: the bundled GPU tests and examples, the in-process launch A/B, the cache-hit
# benchmark beside disk_hit_floor.c. Writes under $OUT.
export NCCL_NVLS_ENABLE=0
set -u
tar -xzf target/gpu-bundle.tar.gz -C /tmp && cd /tmp/gpu-bundle || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
ITEM_TIMEOUT=100 RUN_BENCHES=0 RUN_FLOOR=0 OUT=$OUT/t timeout 330 bash run.sh >"$OUT/tests_stdout.txt" 2>&1
tail -40 "$OUT/tests_stdout.txt"
for abi in cuda-12 cuda-13; do
    echo "== $abi diag_launch_ab"
    timeout 60 taskset -c 2 "./$abi/benches/diag_launch_ab" 15 2>&1 | tail -8
done >"$OUT/launch_ab.txt" 2>&1
cat "$OUT/launch_ab.txt"
OUT=$OUT/b FLOORS="disk_hit_floor" timeout 120 bash bench/run_benchmarks.sh 3 cache_hit >"$OUT/bench_stdout.txt" 2>&1
tail -25 "$OUT/bench_stdout.txt"
