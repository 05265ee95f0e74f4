#!/usr/bin/env bash
# Several "hosts" on one machine: network namespaces PREFIX-h1..hN, each with its own eth0 at
# 10.250.SUBNET.i/24 on a private bridge PREFIXbr, and its own loopback. Needs root and iproute2. Used by test/cli/gloo-netns.test.ts.
#   scripts/netns-hosts.sh up N [PREFIX] [SUBNET]   create N (2..8) hosts; prints "name address" lines
#   scripts/netns-hosts.sh down [PREFIX]            delete them (idempotent; also after a partial up)
#   scripts/netns-hosts.sh exec HOST CMD...         run CMD inside HOST's network namespace
set -euo pipefail

cmd=${1:-}
prefix_default=cbg

down() {
  local prefix=$1
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${prefix}-h[0-9]+$" || true); do
    ip netns del "$ns" 2>/dev/null || true   # also removes the namespace end of its veth pair
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^${prefix}(v[0-9]+|br)$" || true); do
    ip link del "$link" 2>/dev/null || true
  done
}

case "$cmd" in
  up)
    n=${2:?usage: $0 up N [PREFIX] [SUBNET]}
    prefix=${3:-$prefix_default}
    subnet=${4:-0}
    if ! [[ $n =~ ^[2-8]$ ]]; then echo "$0: N must be 2..8, got '$n'" >&2; exit 2; fi
    if ! [[ $subnet =~ ^[0-9]+$ ]] || (( subnet > 255 )); then echo "$0: SUBNET must be 0..255" >&2; exit 2; fi
    if ! [[ $prefix =~ ^[a-z][a-z0-9]{0,8}$ ]]; then echo "$0: PREFIX must be 1-9 lowercase letters/digits" >&2; exit 2; fi
    # A failure half-way leaves nothing behind.
    trap 'down "$prefix"' ERR
    down "$prefix"
    ip link add "${prefix}br" type bridge
    ip link set "${prefix}br" up
    for i in $(seq 1 "$n"); do
      ns="${prefix}-h$i"
      ip netns add "$ns"
      ip link add "${prefix}v$i" type veth peer name eth0 netns "$ns"
      ip link set "${prefix}v$i" master "${prefix}br"
      ip link set "${prefix}v$i" up
      ip -n "$ns" addr add "10.250.$subnet.$i/24" dev eth0
      ip -n "$ns" link set eth0 up
      ip -n "$ns" link set lo up
      echo "$ns 10.250.$subnet.$i"
    done
    trap - ERR
    ;;
  down)
    down "${2:-$prefix_default}"
    ;;
  exec)
    host=${2:?usage: $0 exec HOST CMD...}
    shift 2
    exec ip netns exec "$host" "$@"
    ;;
  *)
    sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
