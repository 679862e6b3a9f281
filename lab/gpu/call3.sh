#!/usr/bin/env bash
# One GPU call: every bundled GPU test and example, both ABIs, then compute-sanitizer memcheck
# on the tests that drop work in flight (cuda-13). Under 560 s in all. Writes under $OUT.
export NCCL_NVLS_ENABLE=0
set -u
tar -xzf target/gpu-bundle.tar.gz -C /tmp && cd /tmp/gpu-bundle || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
ITEM_TIMEOUT=60 RUN_BENCHES=0 RUN_FLOOR=0 OUT=$OUT/t timeout 300 bash run.sh >"$OUT/tests_stdout.txt" 2>&1
grep -E "^(FAIL|SKIP)|passed|failed" "$OUT/t/summary.txt" | tail -30
for f in composed completion; do
    SANITIZE=1 ITEM_TIMEOUT=100 RUN_BENCHES=0 RUN_FLOOR=0 OUT=$OUT/s_$f timeout 110 bash run.sh "cuda-13/tests/$f" >"$OUT/sanitize_$f.txt" 2>&1
    tail -3 "$OUT/s_$f/summary.txt"
done
