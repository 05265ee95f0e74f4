#!/usr/bin/env bash
# Builds, on a machine without a GPU, what scripts/gpu-check.sh needs on one that has a GPU and no Node.js or network:
# the bundle with -D's kernels built against that machine's NCCL headers, and nccl-tests built for the side-by-side.
# Both land as tarballs in the ignored build-gpu/ (under the device tool's 64 MiB carry); the last lines print the
# command to run there. NCCL_TESTS_SRC=DIR: a local nccl-tests source where GitHub is out of reach.
# Usage: scripts/gpu-kit.sh HEADERS (a .tgz or folder holding include/nccl.h of the GPU's NCCL)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
headers="${1:-${GPU_NCCL_HEADERS:-}}"
[ -n "$headers" ] || { echo "gpu-kit: give the GPU machine's NCCL headers: a .tgz or folder holding include/nccl.h" >&2; exit 2; }
[ -e "$headers" ] || { echo "gpu-kit: '$headers' does not exist" >&2; exit 2; }
out="$root/build-gpu"
rm -rf "$out"; mkdir -p "$out/nccl"
if [ -d "$headers" ]; then cp -r "$headers/." "$out/nccl/"; else tar -xzf "$headers" -C "$out/nccl"; fi
[ -f "$out/nccl/include/nccl.h" ] || { echo "gpu-kit: '$headers' holds no include/nccl.h" >&2; exit 2; }
make nccl-cache >/dev/null
include="$out/nccl/include"
[ -f .cache/nccl/nvidia/nccl/include/nccl.h ] && include="$include:$root/.cache/nccl/nvidia/nccl/include"
COLLBENCH_NCCL_INCLUDE="$include" make native ts links >/dev/null
bin/collbench bundle --force -o "$out/collbench-bundle.tar.xz" >/dev/null
NCCL_HEADERS_TGZ="$([ -d "$headers" ] && echo "" || echo "$headers")" NCCL_TESTS_DIR="$out/nccl-tests" \
  scripts/bench-gpu/build-nccl-tests.sh >/dev/null
tar -cJf "$out/nccl-tests-build.tar.xz" -C "$out/nccl-tests" build
rm -rf "$out/nccl-tests" "$out/nccl"
ls -l "$out"
echo "on the GPU machine (carry build-gpu): scripts/gpu-check.sh --bundle build-gpu/collbench-bundle.tar.xz" \
  "--nccl-tests build-gpu/nccl-tests-build.tar.xz --nccl-lib LIBNCCL --out \$OUT/gpu-check.md"
