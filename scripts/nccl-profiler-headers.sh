#!/usr/bin/env bash
# Copies NCCL's profiler plugin headers (plugins/profiler/example/nccl/, or ext-profiler/example/nccl/ before 2.29)
# from a local NCCL source checkout into the ignored .cache/nccl-profiler/<ref>/nccl/, for the ABI pin of the link
# profiler (test/native/link-profiler.test.ts). Never downloads, never commits them.
# Usage: scripts/nccl-profiler-headers.sh NCCL_SRC [REF...]  (NCCL_SRC: a work tree, or a git dir with REFs: tags
# such as v2.28.9-1); prints each directory made.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${1:?usage: nccl-profiler-headers.sh NCCL_SRC [REF...]}"
shift
[ -d "$src" ] || { echo "nccl-profiler-headers: $src is not a directory" >&2; exit 2; }
places=(plugins/profiler/example/nccl ext-profiler/example/nccl)
if [ $# -eq 0 ]; then
  for p in "${places[@]}"; do
    if [ -f "$src/$p/profiler.h" ]; then
      dest="$root/.cache/nccl-profiler/worktree/nccl"
      mkdir -p "$dest" && cp "$src/$p"/*.h "$dest/" && dirname "$dest"
      exit 0
    fi
  done
  echo "nccl-profiler-headers: no profiler.h under $src/{${places[*]}}" >&2
  exit 2
fi
for ref in "$@"; do
  found=""
  for p in "${places[@]}"; do
    files="$(git --git-dir="$src" ls-tree --name-only "$ref" "$p/" 2>/dev/null || true)"
    [ -n "$files" ] || continue
    dest="$root/.cache/nccl-profiler/$ref/nccl"
    mkdir -p "$dest"
    for f in $files; do git --git-dir="$src" show "$ref:$f" > "$dest/$(basename "$f")"; done
    found=1 && dirname "$dest"
    break
  done
  [ -n "$found" ] || { echo "nccl-profiler-headers: $ref has no profiler example headers in $src" >&2; exit 2; }
done
