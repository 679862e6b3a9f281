#!/usr/bin/env bash
# A short GPU call: the bundled GPU tests and examples only, both ABIs. Writes under $OUT.
export NCCL_NVLS_ENABLE=0
set -u
tar -xzf target/gpu-bundle.tar.gz -C /tmp && cd /tmp/gpu-bundle || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
ITEM_TIMEOUT=75 RUN_BENCHES=0 RUN_FLOOR=0 OUT=$OUT/t timeout 280 bash run.sh >"$OUT/tests_stdout.txt" 2>&1
tail -60 "$OUT/tests_stdout.txt"
