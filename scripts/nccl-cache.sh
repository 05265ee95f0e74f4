#!/usr/bin/env bash
# Unpacks a cached NCCL wheel (nvidia_nccl_cu1x-*.whl, a zip) into the
# ignored .cache/nccl/ so the NCCL ABI and error-path tests use a real libnccl without a GPU; never commit it.
# Usage: scripts/nccl-cache.sh [WHEEL] (or COLLBENCH_NCCL_WHEEL): prints the directory holding include/ and
# lib/, or nothing (exit 0) when no wheel is found.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache/nccl"
dest="$cache/nvidia/nccl"

# A cache from before the device headers were unpacked is refreshed when the wheel has them.
if [ -f "$dest/lib/libnccl.so.2" ] && [ -f "$dest/include/nccl.h" ] &&
   { [ -f "$dest/include/nccl_device.h" ] || ! grep -q 'NCCL_MINOR 2[89]\|NCCL_MINOR [3-9][0-9]' "$dest/include/nccl.h"; }; then
  echo "$dest"
  exit 0
fi

wheel="${1:-${COLLBENCH_NCCL_WHEEL:-}}"
if [ -z "$wheel" ]; then
  # Likely places first (cheap), then the whole file system once.
  for d in /opt /root /home /usr/local /tmp /var/cache; do
    [ -d "$d" ] || continue
    wheel="$(find "$d" -name 'nvidia_nccl_cu1[0-9]-*.whl' -print -quit 2>/dev/null || true)"
    [ -n "$wheel" ] && break
  done
fi
if [ -z "$wheel" ]; then
  wheel="$(find / -xdev \( -path /proc -o -path /sys \) -prune -o -name 'nvidia_nccl_cu1[0-9]-*.whl' -print -quit 2>/dev/null || true)"
fi
if [ -z "$wheel" ] || [ ! -f "$wheel" ]; then
  exit 0
fi
if ! command -v unzip >/dev/null 2>&1; then
  echo "nccl-cache: unzip is missing (apt install unzip); cannot unpack $wheel" >&2
  exit 0
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/unpack.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# All headers: nccl_device.h and its directory are what -D's device-API kernels compile against.
unzip -q -o "$wheel" 'nvidia/nccl/include/*' 'nvidia/nccl/lib/*' -d "$tmp"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/nvidia/nccl" "$dest"
echo "$wheel" > "$cache/SOURCE"
echo "$dest"
