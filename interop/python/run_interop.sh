#!/usr/bin/env bash
# Written for `cargo xtask gpu-bundle`, which copies it to <bundle>/interop/.
#
# Runs the DLPack interop proof (scale_torch.py: PyTorch tensors scaled in place by a kernel
# launched through cuda-safe) against each ABI's libcuda_safe_interop.so in the bundle, and
# prints a pass/fail line per ABI with the view-construction figures.
#
# usage: bash interop/run_interop.sh
# environment:
#   PYTHON   the interpreter (default python3); it needs PyTorch with CUDA
set -u

here=$(cd "$(dirname "$0")" && pwd) || exit 2
bundle=$(dirname "$here")
python=${PYTHON:-python3}
status=0
summary=()

for abi in cuda-12 cuda-13; do
    lib=$bundle/$abi/lib/libcuda_safe_interop.so
    echo "=== interop $abi ==="
    if [ ! -f "$lib" ]; then
        echo "missing $lib"
        summary+=("FAIL $abi: library missing")
        status=1
        continue
    fi
    log=$(mktemp) || exit 2
    "$python" "$here/scale_torch.py" "$lib" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -eq 0 ]; then
        summary+=("PASS $abi")
    else
        summary+=("FAIL $abi (exit $rc)")
        status=1
    fi
    while IFS= read -r line; do
        summary+=("     $abi ${line#FIGURE }")
    done < <(grep '^FIGURE ' "$log")
    rm -f "$log"
done

echo "=== interop summary ==="
printf '%s\n' "${summary[@]}"
exit "$status"
