#!/usr/bin/env bash
# Why this exists: `make bench-gpu` in one command: build (or take) nccl-tests beside the project, then run collbench
# against it on this machine's GPU, interleaved, and print the side-by-side table (bench/tools/vs-nccl-tests.ts).
# Works from the source tree or an extracted bundle (no Node.js needed there: the bundle's node runs the runner).
# Usage: scripts/bench-gpu/run.sh [--bundle DIR] [runner options, e.g. --colls all --rounds 5]
# Environment: NCCL_TESTS_BUILD (an nccl-tests build/ folder: skips the build), NODE (the node to use), and those of
# build-nccl-tests.sh (NCCL_TESTS_SRC for a local source tree where GitHub is out of reach, NCCL_HOME, ...).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
if [ "${1:-}" = --bundle ]; then
  [ -n "${2:-}" ] && [ -x "$2/bin/collbench" ] || { echo "bench-gpu: --bundle needs an extracted collbench bundle" >&2; exit 2; }
  top=$(cd "$2" && pwd); shift 2
fi
node=${NODE:-}
[ -n "$node" ] || { [ -x "$top/node/bin/node" ] && node=$top/node/bin/node; } || node=$(command -v node || true)
[ -n "$node" ] || { echo "bench-gpu: no node: set NODE, or use --bundle DIR" >&2; exit 2; }
[ -f "$top/dist/bin/vs-nccl-tests.js" ] || { echo "bench-gpu: $top/dist is not built (make build)" >&2; exit 2; }
build=${NCCL_TESTS_BUILD:-}
if [ -z "$build" ]; then build=$("$here/build-nccl-tests.sh" | tail -1); fi
exec "$node" "$top/dist/bin/vs-nccl-tests.js" --nccl-tests "$build" --collbench "$top/bin" "$@"
