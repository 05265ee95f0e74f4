#!/usr/bin/env bash
# Open MPI's rsh/ssh stand-in for the namespace hosts of scripts/netns-hosts.sh: Open MPI calls
# `AGENT [ssh options…] HOST COMMAND…` (OMPI_MCA_plm_rsh_agent); this runs COMMAND inside HOST's network
# namespace with its own UTS namespace whose host name is HOST, so every daemon and rank sees "its" machine.
# As ssh does, the words of COMMAND are joined with spaces and run by a shell on the "remote" side (Open MPI
# quotes its daemon's arguments for that shell). HOST must be an existing namespace: it is never put into a
# command string, only passed as an argument.
set -euo pipefail

# ssh-style options Open MPI may put before the host (-x, -o Name=value, -p port …).
while (( $# > 0 )); do
  case "$1" in
    -o|-p|-l|-i|-F|-E|-b|-c|-m|-S|-W) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=${1:?usage: netns-rsh.sh [options] HOST COMMAND...}
shift
if ! [[ $host =~ ^[a-z][a-z0-9]{0,8}-h[0-9]+$ ]]; then
  echo "netns-rsh.sh: '$host' is not a namespace host name (PREFIX-hN)" >&2
  exit 255
fi
if ! ip netns list 2>/dev/null | awk '{print $1}' | grep -qxF "$host"; then
  echo "netns-rsh.sh: no network namespace '$host' (scripts/netns-hosts.sh up creates them)" >&2
  exit 255
fi
# $0 of the inner shell is the host name; $1 the remote command line, evaluated as ssh's remote shell would.
exec ip netns exec "$host" unshare --uts -- bash -c 'hostname "$0" && eval "$1"' "$host" "$*"
