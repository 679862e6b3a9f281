#!/usr/bin/env bash
# Builds the C floors of this folder (every *_floor.c, or the ones named) on a machine with the
# CUDA toolkit, each with the libraries it calls, into DIR: one executable per floor, named
# after it without .c. Prints "built NAME" or "FAILED NAME" for each one; gcc's messages go to
# stderr. Exits 1 when a floor failed to build, 0 otherwise.
#
# usage: bash bench/floors/build.sh DIR [NAME...]
#   NAME  a floor without .c (driver_floor, nvml_floor, ...); default: every floor here
# environment: CUDA (the toolkit, default /usr/local/cuda), CC (default gcc)
set -u
here=$(cd "$(dirname "$0")" && pwd) || exit 2
[ $# -ge 1 ] || { echo "usage: bash $0 DIR [NAME...]" >&2; exit 2; }
dir=$1
shift
mkdir -p "$dir" || exit 2
cuda=${CUDA:-/usr/local/cuda}
cc=${CC:-gcc}

# libraries SOURCE: print the -l flags of the libraries the floor SOURCE calls, read from its
# #include lines.
libraries() {
    local libs=(-lcuda -lpthread -lm)
    grep -q '<nvrtc.h>' "$1" && libs+=(-lnvrtc)
    grep -q '<nccl.h>' "$1" && libs+=(-lcudart -lnccl)
    grep -q '<cublas_v2.h>' "$1" && libs+=(-lcublas)
    grep -q '<cublasLt.h>' "$1" && libs+=(-lcublasLt)
    grep -q '<curand.h>' "$1" && libs+=(-lcurand)
    grep -q '<cufft.h>' "$1" && libs+=(-lcufft)
    grep -q '<cusparse.h>' "$1" && libs+=(-lcusparse)
    grep -q '<cusolverDn.h>' "$1" && libs+=(-lcusolver)
    printf '%s\n' "${libs[@]}"
}

# cudnn_include: print the folder holding cudnn.h (the system's, the toolkit's, then PyTorch's
# nvidia-cudnn wheel), or nothing.
cudnn_include() {
    local dir wheel
    wheel=$(python3 -c 'import nvidia.cudnn as m; print(m.__path__[0] + "/include")' 2>/dev/null)
    for dir in /usr/include "$cuda/include" $wheel; do
        [ -f "$dir/cudnn.h" ] && { echo "$dir"; return; }
    done
}

# build SOURCE OUTPUT: compile one floor. libcuda and libnvidia-ml come from the driver's
# versioned files when the toolkit has only their link-time stubs, so the stubs folder comes
# last, and NVML is linked by its soname where no unversioned libnvidia-ml.so exists.
build() {
    local libs
    mapfile -t libs < <(libraries "$1")
    local flags=(-O2 -o "$2" "$1" -I"$cuda/include")
    [ -d "$cuda/include/cccl" ] && flags+=(-I"$cuda/include/cccl")
    flags+=(-L"$cuda/lib64" "-Wl,-rpath,$cuda/lib64")
    # A floor with an optional cuDNN part (HAVE_CUDNN: libs_floor.c's convolutions,
    # dnn_graph_floor.c's graph-API rows) is built with it where cudnn.h is found, and without it
    # otherwise.
    local cudnn
    if grep -q 'HAVE_CUDNN' "$1" && cudnn=$(cudnn_include) && [ -n "$cudnn" ] &&
        "$cc" "${flags[@]}" -DHAVE_CUDNN -I"$cudnn" "${libs[@]}" -l:libcudnn.so.9 2>/dev/null; then
        return 0
    fi
    if grep -q '<nvml.h>' "$1"; then
        "$cc" "${flags[@]}" "${libs[@]}" -lnvidia-ml 2>/dev/null ||
            "$cc" "${flags[@]}" "${libs[@]}" -l:libnvidia-ml.so.1 2>/dev/null ||
            "$cc" "${flags[@]}" -L"$cuda/lib64/stubs" "${libs[@]}" -lnvidia-ml
    else
        "$cc" "${flags[@]}" "${libs[@]}" 2>/dev/null ||
            "$cc" "${flags[@]}" -L"$cuda/lib64/stubs" "${libs[@]}"
    fi
}

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for src in "$here"/*_floor.c; do
        [ -f "$src" ] && names+=("$(basename "$src" .c)")
    done
fi
failed=0
for name in "${names[@]}"; do
    src=$here/$name.c
    if [ -f "$src" ] && build "$src" "$dir/$name"; then
        echo "built $name"
    else
        echo "FAILED $name"
        failed=1
    fi
done
exit "$failed"
