#!/usr/bin/env bash
# One GPU call: the cuFFT and cuSOLVER benchmarks beside libs_floor.c (and PyTorch's rows), the
# in-process BLAS A/B. Writes under $OUT.
export NCCL_NVLS_ENABLE=0
set -u
repo=$(pwd)
[ -d /tmp/gpu-bundle ] || tar -xzf target/gpu-bundle.tar.gz -C /tmp
cd /tmp/gpu-bundle || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader | tee "$OUT/gpu2.txt"
OUT=$OUT/libs FLOORS="libs_floor" BENCH_EXAMPLES="" timeout 420 bash bench/run_benchmarks.sh 2 fft,solver,sparse,dnn >"$OUT/libs_stdout.txt" 2>&1
tail -45 "$OUT/libs_stdout.txt"
PYTHONUNBUFFERED=1 timeout 200 taskset -c 2 /opt/torch/.venv/bin/python "$repo/bench/libs_torch.py" >"$OUT/libs_torch.txt" 2>&1
grep -E "^FIG|FAIL|SKIP" "$OUT/libs_torch.txt"
for abi in cuda-12 cuda-13; do
    echo "== $abi diag_blas_ab"
    timeout 60 taskset -c 2 "./$abi/benches/diag_blas_ab" 7 2>&1 | tail -12
done >"$OUT/blas_ab.txt" 2>&1
cat "$OUT/blas_ab.txt"
