#!/usr/bin/env bash
# Several "hosts" on one machine: network namespaces PREFIX-h1..hN, each with its own eth0 at
# 10.250.SUBNET.i/24 on a private bridge PREFIXbr (which itself gets .254, so programs outside, such as mpirun,
# reach the hosts and are reached back), its own loopback, and a line in /etc/hosts. Needs root and iproute2.
# Used by test/cli/gloo-netns.test.ts and test/cli/locate-netns.test.ts.
#   scripts/netns-hosts.sh up N [PREFIX] [SUBNET]   create N (2..8) hosts; prints "name address" lines
#   scripts/netns-hosts.sh down [PREFIX]            delete them (idempotent; also after a partial up)
#   scripts/netns-hosts.sh exec HOST CMD...         run CMD inside HOST's network namespace
#   scripts/netns-hosts.sh mpi-env [SUBNET]         print the Open MPI environment (NAME=value lines) that starts
#                                                   ranks inside the hosts, e.g.
#     env $(scripts/netns-hosts.sh mpi-env 70) bin/all_reduce_perf --np 4 --hosts cbl-h1,cbl-h2,cbl-h3,cbl-h4
set -euo pipefail

cmd=${1:-}
prefix_default=cbg

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# /etc/hosts is shared with whoever else runs this script (other prefixes): every edit holds this lock, touches
# only the lines tagged with its own prefix, and replaces the file in one rename (readers never see half a file).
hosts_lock=/run/lock/collbench-etc-hosts.lock
hosts_tag() { echo "# collbench-netns $1"; }

edit_etc_hosts() {   # PREFIX [LINE...]: drop PREFIX's lines, then append LINEs
  local prefix=$1; shift
  local tag; tag=$(hosts_tag "$prefix")
  mkdir -p "$(dirname "$hosts_lock")"
  (
    flock -w 30 9 || { echo "$0: could not lock $hosts_lock" >&2; exit 1; }
    tmp=$(mktemp /etc/.hosts.collbench.XXXXXX)
    { grep -vF -- "$tag" /etc/hosts || true; for line in "$@"; do echo "$line $tag"; done; } > "$tmp"
    chmod 644 "$tmp"
    # rename is atomic; where /etc/hosts is a bind mount (containers) it cannot be replaced: rewrite in place.
    if ! mv -f "$tmp" /etc/hosts 2>/dev/null; then cat "$tmp" > /etc/hosts; rm -f "$tmp"; fi
  ) 9>>"$hosts_lock"
}

down() {
  local prefix=$1
  if grep -qF -- "$(hosts_tag "$prefix")" /etc/hosts 2>/dev/null; then edit_etc_hosts "$prefix"; fi
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
    ip addr add "10.250.$subnet.254/24" dev "${prefix}br"
    entries=()
    for i in $(seq 1 "$n"); do
      ns="${prefix}-h$i"
      ip netns add "$ns"
      ip link add "${prefix}v$i" type veth peer name eth0 netns "$ns"
      ip link set "${prefix}v$i" master "${prefix}br"
      ip link set "${prefix}v$i" up
      ip -n "$ns" addr add "10.250.$subnet.$i/24" dev eth0
      ip -n "$ns" link set eth0 up
      ip -n "$ns" link set lo up
      entries+=("10.250.$subnet.$i $ns")
      echo "$ns 10.250.$subnet.$i"
    done
    edit_etc_hosts "$prefix" "${entries[@]}"
    trap - ERR
    ;;
  down)
    down "${2:-$prefix_default}"
    ;;
  mpi-env)
    subnet=${2:-0}
    if ! [[ $subnet =~ ^[0-9]+$ ]] || (( subnet > 255 )); then echo "$0: SUBNET must be 0..255" >&2; exit 2; fi
    # The rsh agent, TCP only on the bridge's subnet (daemons and data), no core binding (each namespace's daemon
    # would bind its rank to core 0), and yielding when idle (more "hosts" than cores: busy polling costs a tick).
    echo "OMPI_MCA_plm_rsh_agent=$here/netns-rsh.sh"
    echo "OMPI_MCA_btl=self,tcp"
    echo "OMPI_MCA_btl_tcp_if_include=10.250.$subnet.0/24"
    echo "OMPI_MCA_oob_tcp_if_include=10.250.$subnet.0/24"
    echo "OMPI_MCA_hwloc_base_binding_policy=none"
    echo "OMPI_MCA_mpi_yield_when_idle=1"
    ;;
  exec)
    host=${2:?usage: $0 exec HOST CMD...}
    shift 2
    exec ip netns exec "$host" "$@"
    ;;
  *)
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
