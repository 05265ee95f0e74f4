#!/usr/bin/env bash
# Why this exists: `make bench-gloo` sets collbench beside Gloo's own benchmark (gloo/benchmark/), built from Gloo's
# public source at the commit Debian's libgloo packages, against the same headers and libgloo that collbench_gloo.node
# links. The source and the build go to the ignored third_party/ and are never committed.
#
# Environment (all optional):
#   GLOO_COMMIT  the commit to build (default 5b14351: Debian's libgloo 0.0~git20220518.5b14351)
#   GLOO_SRC     a local Gloo source instead of `git clone` (GitHub out of reach): a git clone or bare mirror holding
#                GLOO_COMMIT, or a plain tree extracted at it (`git archive 5b14351 | tar -x -C DIR`); a plain tree is
#                taken only at the default commit, whose gloo/benchmark/ tree id is pinned below and checked
#   GLOO_BENCH_DIR  where the source copy and build go (default third_party/gloo-benchmark-<commit>)
# The one change to the benchmark: runner.cc's result row also prints the mean of its samples ("# mean_us X"), which
# the benchmark computes (its GB/s column) but rounds away at small sizes. Prints the program's path on its last line.
# Exit 2 on bad input, 1 on a failed fetch or build.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
commit=${GLOO_COMMIT:-5b14351}
# `git rev-parse 5b14351:gloo/benchmark` in Gloo's history: what a plain GLOO_SRC tree must hash to.
pinned_commit=5b14351 pinned_benchmark_tree=ca7f1a3a37f0466a3a95244c2f5eaf4af275e27c
dest=${GLOO_BENCH_DIR:-$root/third_party/gloo-benchmark-$commit}
die() { rm -rf "$dest.partial"; echo "build-gloo-benchmark: $1" >&2; exit "${2:-2}"; }

[ -f /usr/include/gloo/config.h ] || die "no Gloo headers in /usr/include/gloo (apt-get install libgloo-dev)"
installed=$(dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null || true)
case "$installed" in
  *"$commit"*) ;;
  *) echo "build-gloo-benchmark: warning: libgloo-dev is '$installed', not built from $commit" >&2 ;;
esac

# 1. gloo/benchmark/ at the pinned commit.
if [ ! -f "$dest/gloo/benchmark/runner.cc" ]; then
  rm -rf "$dest.partial" && mkdir -p "$dest.partial"
  if [ -n "${GLOO_SRC:-}" ] && [ -f "$GLOO_SRC/gloo/benchmark/runner.cc" ] && [ ! -e "$GLOO_SRC/.git" ]; then
    [ "$commit" = "$pinned_commit" ] ||
      die "GLOO_SRC=$GLOO_SRC is a plain tree: only $pinned_commit can be checked in one; give a clone for $commit"
    # The tree id of its gloo/benchmark/, through a scratch index: equal to the pinned one only if no file differs.
    scratch=$(mktemp -d) && git init -q "$scratch"
    have=$(git --git-dir="$scratch/.git" --work-tree="$GLOO_SRC" add gloo/benchmark &&
      git --git-dir="$scratch/.git" write-tree --prefix=gloo/benchmark/) || have=unreadable
    rm -rf "$scratch"
    [ "$have" = "$pinned_benchmark_tree" ] ||
      die "GLOO_SRC=$GLOO_SRC: its gloo/benchmark/ (tree $have) is not Gloo's at $commit ($pinned_benchmark_tree)"
    cp -a "$GLOO_SRC/gloo/benchmark" "$dest.partial/" && mkdir -p "$dest.partial/gloo" &&
      mv "$dest.partial/benchmark" "$dest.partial/gloo/"
  elif [ -n "${GLOO_SRC:-}" ]; then
    git -C "$GLOO_SRC" cat-file -e "$commit^{commit}" 2>/dev/null ||
      die "GLOO_SRC=$GLOO_SRC is neither a Gloo clone holding $commit nor a plain tree with gloo/benchmark/"
    git -C "$GLOO_SRC" archive "$commit" gloo/benchmark | tar x -C "$dest.partial"
  else
    git clone -q https://github.com/facebookincubator/gloo.git "$dest.partial/clone" 2>/dev/null ||
      die "cannot clone Gloo from GitHub; give a local clone in GLOO_SRC" 1
    git -C "$dest.partial/clone" archive "$commit" gloo/benchmark | tar x -C "$dest.partial" ||
      die "Gloo's history has no commit $commit" 1
    rm -rf "$dest.partial/clone"
  fi
  # The mean of the samples, after the row (latency.sum() and size() are the benchmark's own Distribution).
  row='^  std::cout << std::setw(kColWidthM) << latency.size();$'
  mean='  std::cout << std::endl << "# mean_us " << (double(latency.sum()) / latency.size() / div);'
  sed -i "s|$row|&\\n$mean|" "$dest.partial/gloo/benchmark/runner.cc"
  grep -q '# mean_us' "$dest.partial/gloo/benchmark/runner.cc" ||
    die "runner.cc at $commit has no result row to extend" 1
  mkdir -p "$(dirname "$dest")" && rm -rf "$dest" && mv "$dest.partial" "$dest"
fi

# 2. Build against the system Gloo (the library collbench links), as Gloo's CMake does: main, options, runner.
if [ ! -x "$dest/benchmark" ]; then
  hiredis=(); [ -d /usr/include/hiredis ] && hiredis=(-I/usr/include/hiredis)
  for f in main options runner; do
    g++ -O2 -std=c++17 -I"$dest" "${hiredis[@]}" -c "$dest/gloo/benchmark/$f.cc" -o "$dest/$f.o" &
  done
  wait
  for f in main options runner; do [ -f "$dest/$f.o" ] || die "compiling gloo/benchmark/$f.cc failed" 1; done
  g++ -o "$dest/benchmark" "$dest/main.o" "$dest/options.o" "$dest/runner.o" -lgloo -lhiredis -lpthread ||
    die "linking Gloo's benchmark failed" 1
fi
echo "$dest/benchmark"
