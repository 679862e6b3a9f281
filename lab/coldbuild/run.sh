#!/usr/bin/env bash
# Cold release builds of the same one-kernel program on cuda-safe (lean: no default features
# and one ABI; defaults) and on cudarc 0.19 (driver and nvrtc; its default features), each into an empty target folder
# with the crates already downloaded. Prints packages (cargo tree -e normal, the program
# included) and user + system CPU-seconds. usage: bash lab/coldbuild/run.sh [rounds]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
rounds=${1:-1}
# Outside the repository: its .cargo/config.toml (CUDARC_CUDA_VERSION) must not apply.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$here/cudarc" "$here/ours" "$work/"
sed -i "s|path = \"../../../cuda-safe\"|path = \"$repo/cuda-safe\"|" "$work/ours/Cargo.toml"
cp "$repo/Cargo.lock" "$work/ours/Cargo.lock"
cd "$work"
build() { # name dir features...
  local name=$1 dir=$2; shift 2
  (cd "$dir" && cargo fetch -q)
  local packages
  packages=$(cd "$dir" && cargo tree -e normal --prefix none "$@" | sed 's/ (\*)//' | sort -u | wc -l)
  local target; target=$(mktemp -d)
  /usr/bin/time -f "%U %S %e" -o "$target/time" \
    cargo build -q --release --manifest-path "$dir/Cargo.toml" --target-dir "$target" "$@"
  read -r user sys wall < "$target/time"
  printf '%-15s round %d: %3d packages, %6.1f CPU-s (%s user + %s sys), %s s wall\n' \
    "$name" "$round" "$packages" "$(echo "$user + $sys" | bc)" "$user" "$sys" "$wall"
  rm -rf "$target"
}
for round in $(seq "$rounds"); do
  build cudarc cudarc
  build cudarc-defaults cudarc --features defaults
  build ours-lean ours
  build ours-defaults ours --no-default-features --features defaults
done
