#!/usr/bin/env bash
# A helper of gpu-check part 60 (not a part: no NN- prefix): starts N ranks of one collbench program torchrun-style on
# this machine (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT; each rank's NCCL RAS on its own port), with per-rank
# variables, a signal to one rank after a delay and NCCL RAS captures while it runs; waits for every rank, kills those
# still running GRACE s after a peer failed (as torchrun does), and prints rank 0's output, every other rank's lines
# as "[rank R] …", then one line per event and rank ("mr: rank R exit C at +S s", "mr: signal STOP to rank R at +S s",
# "mr: rank R killed by the launcher at +S s") and "mr: exit C": 0 when every rank exited 0, else the first non-zero
# exit of a rank neither signalled nor killed by the launcher (1 when there is none).
# Usage: mr-launch.sh -n N [-e R:VAR=VALUE]... [-s R:SIGNAL:AFTER_S] [-c AFTER_S:R:DIR] [-w ERE] [-g GRACE_S]
#                     -- PROGRAM ARGS...
#   -e  a variable for rank R only (R 'all': every rank)   -s  send SIGNAL to rank R AFTER_S s after the start
#   -c  AFTER_S s after the start (or after -s's signal when -s is given), ask rank R's NCCL RAS for STATUS and
#       VERBOSE STATUS, text and JSON, in parallel, into DIR/ras-{status,verbose}.{txt,json.txt} (NCCL's own exchange)
#   -w  -s and -c count from the first line of rank 0's output that matches ERE (e.g. a table row: mid-run)
set -u
usage() {
  echo "usage: mr-launch.sh -n N [-e R:VAR=VALUE]... [-s R:SIGNAL:AFTER_S] [-c AFTER_S:R:DIR] [-w ERE] [-g GRACE_S]" \
    "-- PROGRAM ARGS..." >&2
  exit 2
}
bad() { echo "mr-launch: $*" >&2; exit 2; }
n=0; envs=(); sig=""; capture=""; grace=20; wait_for=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    -n) n="${2:-}"; shift 2 || usage ;;
    -e) envs+=("${2:-}"); shift 2 || usage ;;
    -s) sig="${2:-}"; shift 2 || usage ;;
    -c) capture="${2:-}"; shift 2 || usage ;;
    -g) grace="${2:-}"; shift 2 || usage ;;
    -w) wait_for="${2:-}"; shift 2 || usage ;;
    *) echo "mr-launch: unknown option '$1'" >&2; usage ;;
  esac
done
[ "${1:-}" = "--" ] && [ $# -ge 2 ] || usage
shift
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "mr-launch: -n '$n' is not a rank count" >&2; exit 2; }
[[ "$grace" =~ ^[0-9]+$ ]] || { echo "mr-launch: -g '$grace' is not a number of seconds" >&2; exit 2; }
if [ -n "$sig" ] && ! [[ "$sig" =~ ^[0-9]+:[A-Z0-9]+:[0-9.]+$ ]]; then bad "-s '$sig' is not R:SIGNAL:AFTER_S"; fi
if [ -n "$capture" ] && ! [[ "$capture" =~ ^[0-9.]+:[0-9]+:.+$ ]]; then bad "-c '$capture' is not AFTER_S:R:DIR"; fi
for e in "${envs[@]}"; do
  [[ "$e" =~ ^(all|[0-9]+):[A-Za-z_][A-Za-z0-9_]*=.*$ ]] || bad "-e '$e' is not R:VAR=VALUE"
done

dir="$(mktemp -d "${TMPDIR:-/tmp}/mr-launch.XXXXXX")"
t0=$(date +%s.%N)
since() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
port=$((20000 + RANDOM % 20000)); ras=$((port + 20000))
pids=(); signalled=""
for ((r = 0; r < n; r++)); do
  mine=(RANK="$r" WORLD_SIZE="$n" LOCAL_RANK="$r" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port"
    NCCL_RAS_ADDR="127.0.0.1:$((ras + r))")
  for e in "${envs[@]}"; do case "$e" in "all:"*|"$r:"*) mine+=("${e#*:}") ;; esac; done
  env "${mine[@]}" "$@" > "$dir/$r.out" 2>&1 &
  pids+=($!)
done
cleanup() { for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
trap 'exit 143' TERM INT

# PORT FORMAT(text|json) COMMAND OUTFILE: NCCL's client exchange (src/ras/client.cc), as test/fixtures/nccl-ras show it
ras_query() {
  local port="$1" format="$2" cmd="$3" out="$4" line req
  local reqs=("CLIENT PROTOCOL 2" "TIMEOUT 5"); [ "$format" = json ] && reqs+=("SET FORMAT json")
  {
    exec 3<>"/dev/tcp/127.0.0.1/$port" 2>/dev/null || { echo "# connect to 127.0.0.1:$port refused"; return; }
    for req in "${reqs[@]}"; do
      echo "> $req"; printf '%s\n' "$req" >&3
      IFS= read -r -t 10 line <&3 || { echo "# no answer to '$req'"; exec 3<&-; return; }
      echo "< $line"
    done
    echo "> $cmd"; printf '%s\n' "$cmd" >&3
    timeout 15 cat <&3
    exec 3<&-
  } > "$out" 2>&1
}
capture_ras() { # R DIR
  local r="$1" to="$2"; mkdir -p "$to"
  ras_query $((ras + r)) text STATUS "$to/ras-status.txt" &
  ras_query $((ras + r)) text "VERBOSE STATUS" "$to/ras-verbose-status.txt" &
  ras_query $((ras + r)) json STATUS "$to/ras-status.json.txt" &
  ras_query $((ras + r)) json "VERBOSE STATUS" "$to/ras-verbose-status.json.txt" &
  wait
  echo "mr: RAS of rank $r captured at +$(since) s into $to"
}

events="$dir/events"; : > "$events"
sig_at=""; [ -n "$sig" ] && sig_at="${sig##*:}"
cap_at=""; [ -n "$capture" ] && cap_at="${capture%%:*}"
[ -n "$sig" ] && [ -n "$capture" ] && cap_at=$(awk -v a="$sig_at" -v b="$cap_at" 'BEGIN { print a + b }')
failed_at=""; done_ranks=0; declare -A ended=(); base=0
[ -n "$wait_for" ] && base=""
while [ "$done_ranks" -lt "$n" ]; do
  if [ -z "$base" ] && grep -qE -- "$wait_for" "$dir/0.out" 2>/dev/null; then
    base=$(since); echo "mr: rank 0 printed /$wait_for/ at +$base s" >> "$events"
  fi
  now=$(awk -v a="$(since)" -v b="${base:-1e9}" 'BEGIN { print a - b }')
  if [ -n "$sig_at" ] && awk -v a="$now" -v b="$sig_at" 'BEGIN { exit !(a >= b) }'; then
    r="${sig%%:*}"; s="${sig#*:}"; s="${s%%:*}"
    if [ -z "${ended[$r]:-}" ] && kill -s "$s" "${pids[$r]}" 2>/dev/null; then
      echo "mr: signal $s to rank $r (pid ${pids[$r]}) at +$(since) s" >> "$events"; signalled="$r"
      [ "$s" = STOP ] || [ "$s" = KILL ] && failed_at="${failed_at:-$(since)}"
    else echo "mr: signal $s to rank $r not sent (it had ended) at +$(since) s" >> "$events"; fi
    sig_at=""
  fi
  if [ -n "$cap_at" ] && awk -v a="$now" -v b="$cap_at" 'BEGIN { exit !(a >= b) }'; then
    c="${capture#*:}"; capture_ras "${c%%:*}" "${c#*:}" >> "$events" & cap_at=""
  fi
  for ((r = 0; r < n; r++)); do
    [ -n "${ended[$r]:-}" ] && continue
    if ! kill -0 "${pids[$r]}" 2>/dev/null || [ "$(ps -o stat= -p "${pids[$r]}" 2>/dev/null | cut -c1)" = Z ]; then
      wait "${pids[$r]}"; c=$?; ended[$r]="$c"; done_ranks=$((done_ranks + 1))
      echo "mr: rank $r exit $c at +$(since) s" >> "$events"
      [ "$c" != 0 ] && failed_at="${failed_at:-$(since)}"
    fi
  done
  # a stopped rank outlives its peers: once all others have ended, the launcher ends it at once
  if [ -n "$signalled" ] && [ -z "${ended[$signalled]:-}" ] && [ "$done_ranks" = $((n - 1)) ]; then
    p="${pids[$signalled]}"; kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null
    ended[$signalled]=killed; done_ranks=$((done_ranks + 1))
    echo "mr: rank $signalled killed by the launcher at +$(since) s (its peers had ended)" >> "$events"
  fi
  if [ -n "$failed_at" ] && awk -v a="$(since)" -v b="$failed_at" -v g="$grace" 'BEGIN { exit !(a >= b + g) }'; then
    for ((r = 0; r < n; r++)); do
      [ -n "${ended[$r]:-}" ] && continue
      kill -CONT "${pids[$r]}" 2>/dev/null; kill -9 "${pids[$r]}" 2>/dev/null; wait "${pids[$r]}" 2>/dev/null
      ended[$r]=killed; done_ranks=$((done_ranks + 1))
      echo "mr: rank $r killed by the launcher at +$(since) s (still running ${grace} s after a peer failed)" \
        >> "$events"
    done
  fi
  sleep 0.1
done
wait # a RAS capture still running
cat "$dir/0.out"
for ((r = 1; r < n; r++)); do sed "s/^/[rank $r] /" "$dir/$r.out"; done
cat "$events"
code=0
for ((r = 0; r < n; r++)); do
  c="${ended[$r]}"
  [ "$c" = 0 ] && continue
  [ "$c" = killed ] || [ "$r" = "$signalled" ] && { [ "$code" = 0 ] && code=-1; continue; }
  [ "$code" -le 0 ] && code="$c"
done
[ "$code" = -1 ] && code=1
echo "mr: exit $code"
exit "$code"
