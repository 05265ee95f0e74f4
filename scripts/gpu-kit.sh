#!/usr/bin/env bash
# Builds, on a machine without a GPU, what scripts/gpu-check.sh needs on one that has a GPU and no Node.js or network:
# the bundle with -D's kernels built against that machine's NCCL headers, and nccl-tests built for the side-by-side.
# Both land as tarballs in the ignored build-gpu/ (under the device tool's 64 MiB carry); the last lines print the
# command to run there. NCCL_TESTS_SRC=DIR: a local nccl-tests source where GitHub is out of reach.
# NCCL_EXTRA_LIB=PATH: a newer libnccl.so.2 (e.g. 2.30+ built for sm_90 alone) carried as build-gpu/libnccl.so.2.xz,
# debug sections stripped, for part 60's NCCL_MULTI_RANK_GPU_ENABLE checks; refused when the carry would pass 64 MiB.
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
extra=""
if [ -n "${NCCL_EXTRA_LIB:-}" ]; then
  [ -f "$NCCL_EXTRA_LIB" ] || { echo "gpu-kit: NCCL_EXTRA_LIB '$NCCL_EXTRA_LIB' does not exist" >&2; exit 2; }
  strip --strip-debug -o "$out/libnccl.so.2" "$NCCL_EXTRA_LIB"
  xz -6 -T2 "$out/libnccl.so.2"
  extra=" --nccl-lib build-gpu/libnccl.so.2.xz"
fi
ls -l "$out"
carry=$(du -cb "$out"/* | tail -1 | cut -f1)
if [ "$carry" -gt $((64 * 1024 * 1024)) ]; then
  echo "gpu-kit: build-gpu holds $((carry / 1024 / 1024)) MiB, over the device tool's 64 MiB carry${extra:+: leave NCCL_EXTRA_LIB out}" >&2
  exit 1
fi
echo "on the GPU machine (carry build-gpu): scripts/gpu-check.sh --bundle build-gpu/collbench-bundle.tar.xz" \
  "--nccl-tests build-gpu/nccl-tests-build.tar.xz --nccl-lib LIBNCCL --out \$OUT/gpu-check.md"
echo "then part 60 (several ranks on one GPU) as a second call of at most 300 s: scripts/gpu-check.sh" \
  "--bundle build-gpu/collbench-bundle.tar.xz${extra} --only 60 --budget 290 --out \$OUT/gpu-check-60.md"
