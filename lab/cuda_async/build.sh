#!/usr/bin/env bash
# Builds issue 43's cuda-async comparison programs (this folder's package, on NVIDIA's
# cuda-async 0.5.0) in release and copies them, stripped, to target/cuda-async-bench/ of the
# repository, for lab/gpu/call_async.sh to carry to the GPU machine beside the bundle.
#
# cuda-async's bindings crate (cuda-bindings 0.5.0) runs bindgen over CUDA 13's cuda.h and
# curand.h when it is built, so this installs what is missing first: libclang (apt-get), and
# the headers from NVIDIA's pinned PyPI wheels (pip download, SHA-256 checked), unpacked into a
# folder that CUDA_HOME names for the build. Nothing links against CUDA: cuda-bindings opens
# libcuda.so.1 at run time (dlopen), so the programs run on the GPU machine's driver and need
# no toolkit there. Each program, started here without a driver, must stop with an error line.
#
# usage: bash lab/cuda_async/build.sh
# environment: CARGO_TARGET_DIR (default target/cuda-async-lab of the repository)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target/cuda-async-lab}
out=$repo/target/cuda-async-bench
headers=$target/cuda-13-headers
programs=(cuda_async_completion cuda_async_threads cuda_async_server)
# The carry to the GPU machine has 64 MiB for everything; these three stay well under that.
max_bytes=$((15 << 20))

# The CUDA 13 wheels whose headers cuda-bindings reads: the runtime's (cuda.h) and the C
# runtime's (crt/, which curand.h's cuda_runtime.h includes), as the workspace's bindings pin
# them (13.5.37), and cuRAND's (curand.h), as the workspace pins it. NAME VERSION SHA-256.
wheels=(
    "nvidia-cuda-runtime 13.5.37 df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d"
    "nvidia-cuda-crt 13.5.37 e898b7f73d3035fa89915a3f7bf3b54a73e90249746111aed295822c4729bb29"
    "nvidia-curand 10.4.5.25 22bb226a857e5888fe6b54ae465fc4371296bcff13a35f79e19691bcf454f529"
)

install_libclang() {
    ldconfig -p | grep -q 'libclang\(-[0-9.]*\)\?\.so' && return 0
    echo "build.sh: installing libclang-dev"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq libclang-dev >/dev/null
}

# fetch_headers: unpacks each wheel's include/ into $headers/include (once: a stamp names the
# wheels that made it), checking each wheel's SHA-256; the wheels are removed afterwards.
fetch_headers() {
    local stamp=$headers/wheels.txt
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${wheels[*]}" ]; then
        return 0
    fi
    rm -rf "$headers"
    mkdir -p "$headers/wheels" "$headers/include"
    local entry name version sha file
    for entry in "${wheels[@]}"; do
        read -r name version sha <<<"$entry"
        echo "build.sh: downloading $name==$version"
        python3 -m pip download --quiet --disable-pip-version-check --no-deps \
            --only-binary=:all: --platform manylinux_2_17_x86_64 \
            --platform manylinux2014_x86_64 --platform manylinux_2_27_x86_64 \
            --dest "$headers/wheels" "$name==$version"
        file=$(find "$headers/wheels" -name "${name//-/_}-$version-*.whl" | head -n 1)
        [ -n "$file" ] || { echo "build.sh: pip left no wheel of $name==$version" >&2; exit 1; }
        if [ "$(sha256sum "$file" | cut -d' ' -f1)" != "$sha" ]; then
            echo "build.sh: $file does not have the pinned SHA-256 $sha" >&2
            exit 1
        fi
        python3 - "$file" "$headers/include" <<'PY'
import sys, zipfile, os
wheel, dest = sys.argv[1], sys.argv[2]
prefix = "nvidia/cu13/include/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            path = os.path.join(dest, name[len(prefix):])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(z.read(name))
PY
        rm -f "$file"
    done
    rmdir "$headers/wheels"
    echo "${wheels[*]}" >"$stamp"
}

# check_needed PROGRAM: its dynamic section names no CUDA library (cuda-bindings opens the
# driver at run time); prints what it needs.
check_needed() {
    local needed
    needed=$(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    echo "  $(basename "$1"): needs $needed(libcuda.so.1 opened at run time)"
    if grep -Eq 'libcuda|libnvrtc|libcurand|libcudart' <<<"$needed"; then
        echo "build.sh: $1 links a CUDA library" >&2
        exit 1
    fi
}

# check_no_gpu PROGRAM: where no driver is installed, the program stops at once with an
# error line (not a hang, not a panic).
check_no_gpu() {
    local output status=0
    output=$(timeout 30 "$1" 2>&1) || status=$?
    if [ "$status" -ne 1 ] || ! grep -q '^error: no CUDA driver' <<<"$output"; then
        echo "build.sh: $(basename "$1") without a driver exited $status: $output" >&2
        exit 1
    fi
    echo "  $(basename "$1") without a driver: ${output:0:60}..."
}

install_libclang
fetch_headers
CUDA_HOME=$headers cargo build --release --locked --bins \
    --manifest-path "$here/Cargo.toml" --target-dir "$target"
mkdir -p "$out"
total=0
for program in "${programs[@]}"; do
    cp "$target/release/$program" "$out/$program"
    strip "$out/$program"
    total=$((total + $(stat -c %s "$out/$program")))
    check_needed "$out/$program"
done
if ! ldconfig -p | grep -q 'libcuda\.so\.1'; then
    for program in "${programs[@]}"; do
        check_no_gpu "$out/$program"
    done
fi
echo "build.sh: ${programs[*]} in $out, $((total / 1024)) KiB together"
if [ "$total" -gt "$max_bytes" ]; then
    echo "build.sh: over $((max_bytes >> 20)) MiB" >&2
    exit 1
fi
