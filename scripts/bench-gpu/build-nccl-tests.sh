#!/usr/bin/env bash
# Why this exists: `make bench-gpu` compares collbench with NVIDIA's nccl-tests on the same GPU and NCCL, so it needs
# an nccl-tests build of a pinned tag beside the project (in the ignored third_party/, never committed). This fetches
# the source (or takes a local copy: CI and the GPU machine may not reach GitHub) and builds the eleven *_perf programs.
#
# Environment (all optional):
#   NCCL_TESTS_TAG      the tag to build (default v2.19.6; a local source must say the same version in src/common.h)
#   NCCL_TESTS_SRC      a local nccl-tests source tree to build instead of `git clone` (copied, never modified)
#   NCCL_TESTS_DIR      where the source copy and build go (default third_party/nccl-tests-<tag>)
#   NCCL_HOME           an NCCL with include/nccl.h and lib/libnccl.so; default: assembled in third_party/nccl-home from
#                       NCCL_HEADERS_TGZ (headers of the NCCL the GPU runs, e.g. 2.28.9) or the cached wheel's headers
#                       (.cache/nccl, `make nccl-cache`), and the cached wheel's libnccl.so.2 for linking
#   NCCL_HEADERS_TGZ    a .tgz holding include/nccl.h (the GPU machine's own headers)
#   CUDA_HOME           default /usr/local/cuda;  NVCC_GENCODE  default sm_90 (H100/H200)
# Prints the directory holding the built programs on its last line. Exit 2 on bad input, 1 on a failed build.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tag=${NCCL_TESTS_TAG:-v2.19.6}
dest=${NCCL_TESTS_DIR:-$root/third_party/nccl-tests-$tag}
cuda=${CUDA_HOME:-/usr/local/cuda}
gencode=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
die() { echo "build-nccl-tests: $1" >&2; exit "${2:-2}"; }

[ -x "$cuda/bin/nvcc" ] || command -v nvcc >/dev/null || die "no nvcc in $cuda/bin or on PATH (set CUDA_HOME)"

# 1. The source, at the pinned tag.
want=${tag#v}
if [ ! -f "$dest/src/common.h" ]; then
  rm -rf "$dest.partial"
  if [ -n "${NCCL_TESTS_SRC:-}" ]; then
    [ -f "$NCCL_TESTS_SRC/src/common.h" ] || die "NCCL_TESTS_SRC=$NCCL_TESTS_SRC is not an nccl-tests source tree (no src/common.h)"
    mkdir -p "$dest.partial" && cp -a "$NCCL_TESTS_SRC/." "$dest.partial/"
  else
    git clone -q --depth 1 --branch "$tag" https://github.com/NVIDIA/nccl-tests.git "$dest.partial" ||
      die "cannot clone nccl-tests $tag from GitHub; give a local source tree in NCCL_TESTS_SRC" 1
  fi
  mkdir -p "$(dirname "$dest")" && mv "$dest.partial" "$dest"
fi
have=$(sed -n 's/^#define NCCL_TESTS_VERSION "\(.*\)"/\1/p' "$dest/src/common.h")
[ "$have" = "$want" ] || die "the nccl-tests source in $dest is version '$have', not $want (NCCL_TESTS_TAG=$tag)"

# 2. An NCCL to compile and link against.
if [ -z "${NCCL_HOME:-}" ]; then
  NCCL_HOME=$root/third_party/nccl-home
  wheel=$root/.cache/nccl/nvidia/nccl
  [ -f "$wheel/lib/libnccl.so.2" ] || "$root/scripts/nccl-cache.sh" >/dev/null 2>&1 || true
  [ -f "$wheel/lib/libnccl.so.2" ] || die "no NCCL_HOME and no cached NCCL wheel in .cache/nccl (make nccl-cache)"
  rm -rf "$NCCL_HOME" && mkdir -p "$NCCL_HOME/lib"
  if [ -n "${NCCL_HEADERS_TGZ:-}" ]; then
    [ -f "$NCCL_HEADERS_TGZ" ] || die "NCCL_HEADERS_TGZ=$NCCL_HEADERS_TGZ does not exist"
    tar xzf "$NCCL_HEADERS_TGZ" -C "$NCCL_HOME"
    [ -f "$NCCL_HOME/include/nccl.h" ] || die "NCCL_HEADERS_TGZ=$NCCL_HEADERS_TGZ holds no include/nccl.h"
  else
    cp -a "$wheel/include" "$NCCL_HOME/include"
  fi
  ln -sf "$wheel/lib/libnccl.so.2" "$NCCL_HOME/lib/libnccl.so.2"
  ln -sf libnccl.so.2 "$NCCL_HOME/lib/libnccl.so"
fi
[ -f "$NCCL_HOME/include/nccl.h" ] || die "NCCL_HOME=$NCCL_HOME has no include/nccl.h"
[ -e "$NCCL_HOME/lib/libnccl.so" ] || die "NCCL_HOME=$NCCL_HOME has no lib/libnccl.so (link it to libnccl.so.2)"

# 3. Build (MPI=0: one process, -g GPUs; the side-by-side runs one rank).
make -s -C "$dest/src" -j"$(nproc)" MPI=0 CUDA_HOME="$cuda" NCCL_HOME="$NCCL_HOME" NVCC_GENCODE="$gencode" \
  BUILDDIR="$dest/build" >&2 || die "make failed in $dest/src" 1
for p in all_reduce all_gather broadcast reduce_scatter reduce alltoall alltoallv scatter gather sendrecv hypercube; do
  [ -x "$dest/build/${p}_perf" ] || die "the build left no $dest/build/${p}_perf" 1
done
echo "$dest/build"
