#!/usr/bin/env bash
# A helper of gpu-check part 60 (not a part: no NN- prefix): runs one command (mostly mr-launch.sh, whose "mr:" lines
# it reads) and judges its output by one of part 60's rules, as expect.sh does for tables; tested on recorded outputs
# by test/unit/gpu-multirank.test.ts. Prints the output, then "judge: ok: …" or "judge: not met: …"; exit 0 when
# met.
# Usage: mr-judge.sh JUDGE [ARGS...] -- COMMAND...
#   hung R T [JSON]   SIGSTOP on rank R: the first peer exits 4 within T + 5 s of the stop, the verdict names rank R
#                     once; with JSON (the -J report): NCCL RAS's view printed and recorded there
#   dead R S          kill -9 of rank R: every other rank exits non-zero within S s of the kill, none killed by the
#                     launcher
#   bringup R T       rank R fails its bring-up: every rank exits non-zero with a reason line of its own, none killed by
#                     the launcher, all within T + 10 s; R = 0: every other rank exits 5 (no unique id for anyone)
#   late R [TRACE LATENESS]  rank R named late with its GPU by device arrivals and no other rank named; with TRACE:
#                     collbench's rule on the trace's host enqueue times names nobody in any row-half
#   choices           compare's table: a row per size, each with the algorithm/protocol NCCL chose ('?' is none)
#   locate HOST       locate names HOST as a suspect and no other host
set -u
judge="${1:-}"; shift || true
args=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
if [ -z "$judge" ] || [ "${1:-}" != "--" ] || [ $# -lt 2 ]; then
  echo "usage: mr-judge.sh JUDGE [ARGS...] -- COMMAND..." >&2; exit 2
fi
shift
dir="$(mktemp -d "${TMPDIR:-/tmp}/mr-judge.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
"$@" > "$dir/out" 2>&1
code=$?
cat "$dir/out"
[ -n "$(tail -c 1 "$dir/out")" ] && echo # the verdict on a line of its own
out="$dir/out"
missed=(); notes=()
# "mr: …" event times: event_at ERE -> the +S of the first matching line ('' when none)
event_at() { sed -nE "s/^mr: $1 at \+([0-9.]+) s.*/\1/p" "$out" | head -1; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b + 1e-9) }'; }
rank_lines() { # R: the lines of rank R (rank 0's are unprefixed and not mr:)
  if [ "$1" = 0 ]; then grep -vE '^(\[rank [0-9]+\] |mr: )' "$out"; else sed -n "s/^\[rank $1\] //p" "$out"; fi
}
exits() { grep -E '^mr: rank [0-9]+ exit' "$out" | sed -E 's/^mr: //' | paste -sd ';' -; }
ranks_in() { sed -nE 's/^mr: rank ([0-9]+) (exit|killed).*/\1/p' "$out" | sort -n | uniq; }

case "$judge" in
  hung)
    r="${args[0]:?hung R T [JSON]}" t="${args[1]:?hung R T [JSON]}" json="${args[2]:-}"
    stop="$(event_at "signal STOP to rank $r \(pid [0-9]+\)")"
    first="$(sed -nE "s/^mr: rank ([0-9]+) exit 4 at \+([0-9.]+) s.*/\1 \2/p" "$out" |
      awk -v r="$r" '$1 != r { print $2; exit }')"
    if [ -z "$stop" ]; then missed+=("rank $r was never stopped")
    elif [ -z "$first" ]; then missed+=("no peer exited 4 (-T's timeout)")
    else
      limit="$(awk -v s="$stop" -v t="$t" 'BEGIN { print s + t + 5 }')"
      if ! le "$first" "$limit"; then
        missed+=("the first peer exited 4 at +$first s, later than T + 5 s after the stop at +$stop s")
      else notes+=("stopped at +$stop s, first peer exit 4 at +$first s (limit +$limit s)"); fi
    fi
    k="$(grep -cE "^timeout: rank $r \(host [^)]*\) did not arrive" "$out")"
    [ "$k" = 1 ] || missed+=("$k verdict lines naming rank $r, expected 1")
    if grep -E "^timeout: rank [0-9]+" "$out" | grep -qvE "^timeout: rank $r "; then
      missed+=("a verdict names another rank"); fi
    if grep -E "^mr: rank [0-9]+ killed by the launcher .*still running" "$out" | grep -qvE "^mr: rank $r "; then
      missed+=("a peer had to be killed by the launcher"); fi
    if [ -n "$json" ]; then
      grep -qE '^# NCCL RAS at ' "$out" || missed+=("no '# NCCL RAS at' view printed")
      if [ ! -f "$json" ]; then missed+=("no -J report $json")
      elif ! grep -q '"source": "NCCL RAS"' "$json"; then missed+=("the -J report has no NCCL RAS view")
      else notes+=("RAS view in -J: $(grep -oE '"state": "[a-z-]+"' "$json" | head -1)"); fi
    fi ;;
  dead)
    r="${args[0]:?dead R S}" s="${args[1]:?dead R S}"
    kill_at="$(event_at "signal KILL to rank $r \(pid [0-9]+\)")"
    [ -n "$kill_at" ] || missed+=("rank $r was never killed")
    for p in $(ranks_in); do
      [ "$p" = "$r" ] && continue
      line="$(grep -E "^mr: rank $p (exit|killed)" "$out" | head -1)"
      case "$line" in
        *killed*) missed+=("rank $p was killed by the launcher") ;;
        *"exit 0 "*) missed+=("rank $p exited 0") ;;
        *) at="$(sed -nE 's/.* at \+([0-9.]+) s.*/\1/p' <<<"$line")"
           [ -n "$kill_at" ] && ! le "$at" "$(awk -v a="$kill_at" -v s="$s" 'BEGIN { print a + s }')" &&
             missed+=("rank $p ended at +$at s, more than $s s after the kill at +$kill_at s") ;;
      esac
    done
    [ ${#missed[@]} -eq 0 ] && notes+=("killed at +$kill_at s; $(exits)") ;;
  bringup)
    r="${args[0]:?bringup R T}" t="${args[1]:?bringup R T}"
    all="$(ranks_in)"; [ -n "$all" ] || missed+=("no rank ended")
    for p in $all; do
      line="$(grep -E "^mr: rank $p (exit|killed)" "$out" | head -1)"
      case "$line" in
        *killed*) missed+=("rank $p hung: killed by the launcher") ;;
        *"exit 0 "*) missed+=("rank $p exited 0") ;;
        *) at="$(sed -nE 's/.* at \+([0-9.]+) s.*/\1/p' <<<"$line")"
           c="$(sed -nE 's/.* exit ([0-9]+) .*/\1/p' <<<"$line")"
           le "$at" $((t + 10)) || missed+=("rank $p ended at +$at s, after T + 10 s")
           [ "$r" = 0 ] && [ "$p" != 0 ] && [ "$c" != 5 ] && missed+=("rank $p exit $c, expected 5 (no unique id)")
           rank_lines "$p" | grep -qE '^(rank [0-9]+ on host \S+|\S+): ' || missed+=("rank $p printed no reason") ;;
      esac
    done
    rank_lines "$r" | grep -qiE 'NCCL_SOCKET_IFNAME|socket interface|no interface|bootstrap' ||
      missed+=("rank $r's lines do not name the socket interface or bootstrap")
    [ ${#missed[@]} -eq 0 ] && notes+=("$(exits)") ;;
  late)
    r="${args[0]:?late R [TRACE LATENESS]}" trace="${args[1]:-}" lateness="${args[2]:-}"
    grep -qE "^# late rank: $r on \S+, GPU [0-9]+" "$out" || missed+=("no '# late rank: $r on HOST, GPU N' summary")
    others="$(grep -E '^# late: ' "$out" | grep -vE ": rank $r on \S+, GPU [0-9]+ " | head -1)"
    [ -z "$others" ] || missed+=("another late line: $others")
    n="$(grep -cE "^# late: .*: rank $r on \S+, GPU [0-9]+ " "$out")"
    notes+=("device arrivals: rank $r named in $n row-halves")
    if [ -n "$trace" ]; then
      host="$("${GC_NODE:-node}" "$(dirname "${BASH_SOURCE[0]}")/mr-host-late.mjs" "$trace" "$lateness" 2>&1)"
      echo "$host"
      summary="$(grep -E '^host enqueue: ' <<<"$host")"
      if [ -z "$summary" ]; then missed+=("the host enqueue check printed nothing: $(head -c 200 <<<"$host")")
      elif grep -qE ': (no rows|none)|^host enqueue: 0 row-halves' <<<"$summary"; then
        missed+=("no host enqueue times in the trace")
      # The device delay must not show in host enqueue; time-sliced ranks' own noise may name another (a note).
      elif grep -qE "rank $r in" <<<"$summary"; then missed+=("host enqueue names the delayed rank: $summary")
      else notes+=("$summary"); fi
    fi ;;
  choices)
    verdict="$(awk '/^# size \(B\) .*NCCL chose/ { on = 1; next } on && /^#/ { on = 0 }
                    on && /^ +[0-9]+ / { rows++; if ($NF == "?" || $NF !~ /^[A-Z_]+\/[A-Z0-9_]+/) bad++ }
                    END { printf "%d %d", rows, bad }' "$out")"
    rows="${verdict% *}" bad="${verdict#* }"
    [ "$rows" -gt 0 ] || missed+=("no size rows under a 'NCCL chose' column")
    [ "$bad" = 0 ] || missed+=("$bad sizes without NCCL's choice")
    [ "$code" = 0 ] || [ "$code" = 3 ] || missed+=("compare exit $code (0: clean, 3: a combination failed)")
    combos="$(grep -cE '^#  C[0-9]+ ' "$out")" failed="$(grep -E '^#  C[0-9]+ ' "$out" | grep -cvE ' ok ')"
    notes+=("$rows sizes with NCCL's choice; combinations: $combos ($failed not ok)") ;;
  locate)
    h="${args[0]:?locate HOST}"
    grep -qE "^# suspect host $h " "$out" || missed+=("$h not named a suspect host")
    other="$(grep -E '^# suspect host ' "$out" | grep -vE "^# suspect host $h " | head -1)"
    [ -z "$other" ] || missed+=("another suspect: $other")
    notes+=("$(grep -E '^# verdict: ' "$out" | head -1)") ;;
  *) echo "mr-judge: unknown judge '$judge'" >&2; exit 2 ;;
esac
if [ ${#missed[@]} -eq 0 ]; then
  line="judge: ok: $judge: ${notes[0]:-met}"; for m in "${notes[@]:1}"; do line+="; $m"; done; echo "$line"; exit 0
fi
line="judge: not met: $judge: ${missed[0]}"; for m in "${missed[@]:1}"; do line+="; $m"; done; echo "$line"
exit 1
