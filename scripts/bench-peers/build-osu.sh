#!/usr/bin/env bash
# Why this exists: `make bench-osu` sets collbench's MPI backend beside the OSU Micro-Benchmarks' blocking collectives,
# built from their public source at a pinned release with the same mpicc (the same Open MPI collbench_mpi.node links).
# The source and the build go to the ignored third_party/ and are never committed.
#
# Environment (all optional):
#   OSU_VERSION  the release (default 7.4; a local source must say the same version in configure.ac)
#   OSU_SRC      a local OSU source tree (unpacked release) instead of downloading the release tarball
#   OSU_URL      the tarball (default https://mvapich.cse.ohio-state.edu/download/mvapich/osu-micro-benchmarks-V.tar.gz)
#   OSU_DIR      where the source copy and build go (default third_party/osu-micro-benchmarks-<version>)
# Prints the directory holding osu_allreduce, osu_bcast, ... on its last line. Exit 2 on bad input, 1 on a failed build.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
version=${OSU_VERSION:-7.4}
url=${OSU_URL:-https://mvapich.cse.ohio-state.edu/download/mvapich/osu-micro-benchmarks-$version.tar.gz}
dest=${OSU_DIR:-$root/third_party/osu-micro-benchmarks-$version}
die() { rm -rf "$dest.partial"; echo "build-osu: $1" >&2; exit "${2:-2}"; }

command -v mpicc >/dev/null || die "no mpicc on PATH (apt-get install libopenmpi-dev)"

# 1. The source, at the pinned release.
if [ ! -f "$dest/configure" ]; then
  rm -rf "$dest.partial" && mkdir -p "$dest.partial"
  if [ -n "${OSU_SRC:-}" ]; then
    [ -f "$OSU_SRC/configure" ] && [ -d "$OSU_SRC/c/mpi/collective" ] ||
      die "OSU_SRC=$OSU_SRC is not an OSU source tree"
    cp -a "$OSU_SRC/." "$dest.partial/"
  else
    { curl -fsSL "$url" | tar xz --strip-components=1 -C "$dest.partial"; } 2>/dev/null ||
      die "cannot download $url; give a local source tree in OSU_SRC" 1
  fi
  mkdir -p "$(dirname "$dest")" && rm -rf "$dest" && mv "$dest.partial" "$dest"
fi
have=$(sed -n 's/^AC_INIT(\[OSU-Micro-Benchmarks\], \[\([^]]*\)\].*/\1/p' "$dest/configure.ac")
[ "$have" = "$version" ] || die "the OSU source in $dest is version '$have', not $version (OSU_VERSION)"

# 2. Build the blocking collectives only (they compile c/util themselves).
bin=$dest/c/mpi/collective/blocking
if [ ! -x "$bin/osu_allreduce" ]; then
  (cd "$dest" && ./configure -q CC=mpicc CXX=mpicxx >&2) || die "configure failed in $dest" 1
  make -s -C "$bin" >&2 || die "make failed in $bin" 1
fi
for p in osu_allreduce osu_bcast osu_alltoall osu_allgather osu_reduce_scatter; do
  [ -x "$bin/$p" ] || die "the build left no $bin/$p" 1
done
echo "$bin"
