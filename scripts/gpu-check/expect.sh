#!/usr/bin/env bash
# A helper of the gpu-check parts (not a part: its name has no NN- prefix): runs one command and judges its output
# against several expectations at once, as a test case does, where gc_check (lib.sh) matches one pattern. Prints the
# command's stdout, then its stderr, then one verdict line, "expect: all N met" or "expect: not met: …", and exits
# with the command's exit code (gc_check judges that). The GPU machine has no Node.js, so no test file can run there.
# Usage: expect.sh [-p ERE] [-n ERE] [-l ERE COUNT] [-s COUNT] [-c] [-k] -- COMMAND...
#   -p ERE        the output (stdout and stderr) has a line matching ERE
#   -n ERE        no line of the output matches ERE
#   -l ERE COUNT  exactly COUNT lines of the output match ERE
#   -s COUNT      stderr has exactly COUNT non-empty lines
#   -c            an nccl-tests table with at least one row, every row's #wrong 0 (or N/A), and "Out of bounds values : 0 OK"
#   -k            no row is of a datatype x op pair that a "# Skipped N datatype x op pairs that … refuses (…): …" line names
set -u
checks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    -p|-n) checks+=("$1" "$2"); shift 2 ;;
    -l) checks+=(-l "$2|$3"); shift 3 ;;
    -s) checks+=(-s "$2"); shift 2 ;;
    -c|-k) checks+=("$1" -); shift ;;
    *) echo "expect.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ "${1:-}" = "--" ] || { echo "expect.sh: usage: expect.sh [checks] -- COMMAND..." >&2; exit 2; }
shift
dir="$(mktemp -d "${TMPDIR:-/tmp}/expect.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
# Stopped by gc_check's time limit: what the command printed so far is the only clue to where it stood.
trap 'cat "$dir/out" "$dir/err" 2>/dev/null; echo "expect: stopped by a signal while the command ran"; exit 124' TERM INT
"$@" > "$dir/out" 2> "$dir/err" &
wait $!
code=$?
cat "$dir/out" "$dir/err" > "$dir/all"
cat "$dir/all"
# A table row (an awk pattern that sets lead: the leading columns, h: the columns of one half); other lines fail it.
rows_awk='!/^#/ && /^ *[0-9]/ && (n = NF - ($(NF - 1) ~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$/ ? 2 : 0)) &&
  (lead = (n % 2 == 0) ? 4 : 5) && (h = (n - lead) / 2) && (h == 4 || h == 8)'
missed=()
for ((i = 0; i < ${#checks[@]}; i += 2)); do
  kind="${checks[i]}" arg="${checks[i + 1]}"
  case "$kind" in
    -p) grep -Eq -- "$arg" "$dir/all" || missed+=("no line matches /$arg/") ;;
    -n) ! grep -Eq -- "$arg" "$dir/all" || missed+=("a line matches /$arg/") ;;
    -l) ere="${arg%|*}" want="${arg##*|}" got="$(grep -Ec -- "$ere" "$dir/all")"
        [ "$got" = "$want" ] || missed+=("$got lines match /$ere/, expected $want") ;;
    -s) got="$(grep -c . "$dir/err")"; [ "$got" = "$arg" ] || missed+=("stderr has $got lines, expected $arg") ;;
    -c) # data rows as bench/report/reporters/nccl-table.ts splitTableRow splits them: -S's timestamp (2 fields) left
        # out; hypercube prints no redop (an even count); each half time algbw busbw #wrong, plus 4 -I 1 columns
        verdict="$(awk "$rows_awk"' { rows++; o = lead + 4; i = lead + h + 4;
                     if (!($o == "0" || $o == "N/A") || !($i == "0" || $i == "N/A")) bad++ }
                   END { printf "%d %d", rows, bad }' "$dir/out")"
        rows="${verdict% *}" bad="${verdict#* }"
        [ "$rows" -gt 0 ] || missed+=("no table rows")
        [ "$bad" = 0 ] || missed+=("$bad rows with #wrong > 0")
        grep -Eq '^# Out of bounds values : 0 OK' "$dir/out" || missed+=("no '# Out of bounds values : 0 OK'") ;;
    -k) ran="$(awk '/^# Skipped [0-9]+ datatype x op pairs? that / { sub(/^[^)]*\): /, ""); n = split($0, p, ", ");
                     for (k = 1; k <= n; k++) skip[p[k]] = 1 }
                   '"$rows_awk"' && lead == 5 && (($3 " " $4) in skip) { print $3 " " $4 }' "$dir/out" | sort -u)"
        [ -z "$ran" ] || missed+=("skipped pairs in the table: $(echo $ran)") ;;
  esac
done
if [ ${#missed[@]} -eq 0 ]; then echo "expect: all $(( ${#checks[@]} / 2 )) met"; else
  line="expect: not met: ${missed[0]}"; for m in "${missed[@]:1}"; do line+="; $m"; done; echo "$line"; fi
exit "$code"
