#!/usr/bin/env bash
# Every GPU check of collbench in one call (issue #28): run on a machine with a GPU, a libnccl and an extracted
# bundle (no Node.js needed), it runs each part in scripts/gpu-check/NN-*.sh in order and writes one Markdown
# report with versions, every command, its exit code and verdict, and the parts' tables.
# DIR may also be a .tar.xz (the bundle, nccl-tests' build/; scripts/gpu-kit.sh makes both), PATH a libnccl .xz.
# Usage: scripts/gpu-check.sh --bundle DIR [--nccl-lib PATH] [--nccl-tests DIR] [--out FILE] [--budget SEC] [--only PART] [--skip PART]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage() { echo "usage: scripts/gpu-check.sh --bundle DIR [--nccl-lib PATH] [--nccl-tests DIR] [--out FILE] [--budget SEC] [--only PART] [--skip PART]" >&2; exit 2; }
GC_BUNDLE=""; GC_NCCL_LIB="${COLLBENCH_NCCL_LIB:-}"; GC_NCCL_TESTS=""; GC_OUT="gpu-check-report.md"; GC_BUDGET=420; GC_ONLY=""; GC_SKIP_PART=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) GC_BUNDLE="${2:-}"; shift 2 || usage ;;
    --nccl-lib) GC_NCCL_LIB="${2:-}"; shift 2 || usage ;;
    --nccl-tests) GC_NCCL_TESTS="${2:-}"; shift 2 || usage ;;
    --out) GC_OUT="${2:-}"; shift 2 || usage ;;
    --budget) GC_BUDGET="${2:-}"; shift 2 || usage ;;
    --only) GC_ONLY="${2:-}"; shift 2 || usage ;;
    --skip) GC_SKIP_PART="${2:-}"; shift 2 || usage ;;
    -h|--help) usage ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$GC_BUNDLE" ] || { echo "gpu-check: --bundle DIR is required (an extracted collbench bundle, or the built tree)" >&2; exit 2; }
# Tarballs (scripts/gpu-kit.sh makes both) are unpacked into a scratch folder removed at exit.
GC_UNPACK=""
gc_unpack() { # TARBALL -> the folder it holds
  [ -f "$1" ] || { echo "gpu-check: '$1' does not exist" >&2; exit 2; }
  local d; d="$GC_UNPACK/$(basename "$1" .tar.xz)"; mkdir -p "$d"
  tar -xJf "$1" -C "$d" || { echo "gpu-check: cannot unpack '$1'" >&2; exit 2; }
  local top; top="$(find "$d" -mindepth 1 -maxdepth 1)"
  if [ "$(printf '%s\n' "$top" | wc -l)" = 1 ] && [ -d "$top" ]; then echo "$top"; else echo "$d"; fi
}
if [[ "$GC_BUNDLE$GC_NCCL_TESTS$GC_NCCL_LIB" == *.xz* ]]; then
  GC_UNPACK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-unpack.XXXXXX")"; trap 'rm -rf "$GC_UNPACK"' EXIT
fi
case "$GC_BUNDLE" in *.tar.xz) GC_BUNDLE="$(gc_unpack "$GC_BUNDLE")" ;; esac
case "$GC_NCCL_TESTS" in *.tar.xz) GC_NCCL_TESTS="$(gc_unpack "$GC_NCCL_TESTS")" ;; esac
case "$GC_NCCL_LIB" in *.xz) # a libnccl carried compressed (scripts/gpu-kit.sh NCCL_EXTRA_LIB)
  [ -f "$GC_NCCL_LIB" ] || { echo "gpu-check: --nccl-lib '$GC_NCCL_LIB' does not exist" >&2; exit 2; }
  xz -dc "$GC_NCCL_LIB" > "$GC_UNPACK/libnccl.so.2" || { echo "gpu-check: cannot unpack '$GC_NCCL_LIB'" >&2; exit 2; }
  GC_NCCL_LIB="$GC_UNPACK/libnccl.so.2" ;;
esac
[ -x "$GC_BUNDLE/bin/collbench" ] || { echo "gpu-check: --bundle '$GC_BUNDLE' has no bin/collbench" >&2; exit 2; }
[[ "$GC_BUDGET" =~ ^[0-9]+$ ]] || { echo "gpu-check: --budget '$GC_BUDGET' is not a whole number of seconds" >&2; exit 2; }
if [ -n "$GC_NCCL_LIB" ] && [ ! -f "$GC_NCCL_LIB" ]; then echo "gpu-check: --nccl-lib '$GC_NCCL_LIB' does not exist" >&2; exit 2; fi
if [ -n "$GC_NCCL_TESTS" ] && [ ! -x "$GC_NCCL_TESTS/all_reduce_perf" ]; then
  echo "gpu-check: --nccl-tests '$GC_NCCL_TESTS' has no all_reduce_perf (give nccl-tests' build/ folder)" >&2; exit 2
fi
GC_BUNDLE="$(cd "$GC_BUNDLE" && pwd)"
[ -n "$GC_NCCL_LIB" ] && export COLLBENCH_NCCL_LIB="$GC_NCCL_LIB"
[ -n "$GC_NCCL_TESTS" ] && GC_NCCL_TESTS="$(cd "$GC_NCCL_TESTS" && pwd)"
export GC_BUNDLE GC_NCCL_TESTS GC_OUT GC_BUDGET
# shellcheck source=gpu-check/lib.sh
. "$here/gpu-check/lib.sh"
gc_begin
for part in "$here"/gpu-check/[0-9][0-9]-*.sh; do
  name="$(basename "$part" .sh)"
  if [ -n "$GC_ONLY" ] && [[ "$name" != *"$GC_ONLY"* ]]; then continue; fi
  if [ -n "$GC_SKIP_PART" ] && [[ "$name" == *"$GC_SKIP_PART"* ]]; then continue; fi
  gc_part "$name"
  # shellcheck disable=SC1090
  . "$part"
done
gc_end
