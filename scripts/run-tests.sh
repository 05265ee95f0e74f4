#!/usr/bin/env bash
# Runs the test files with node's test runner (`make test`, `make test-unit`), in two groups, one after the other:
#   parallel  TEST_JOBS files at a time (default 2): files that share nothing with another file but the CPU;
#   serial    one file at a time, alone on the machine: files that use a machine-wide resource or whose
#             assertions race a clock (reasons below).
# Then one closing summary over both groups, ending in a plain "N passed, N failed, N skipped" line.
# Usage: scripts/run-tests.sh [all|unit|parallel|serial|list]  (all: both groups; unit: test/unit only, no native
# build; list: print the groups)
# Exit status: 0 when every group passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

what=${1:-all}
jobs=${TEST_JOBS:-2}
node_test=(node --import tsx --test)

# Alone, one at a time: a file here must not run beside any other test file.
serial=(
  # network namespaces cbg-h1..hN, bridge cbgbr and veths with fixed names and addresses (scripts/netns-hosts.sh),
  # MASTER_PORT 29500 and redis on 6379 inside them; `ip netns list` must be empty afterwards
  test/cli/gloo-netns.test.ts
  # kills or SIGSTOPs a gloo rank and asserts the job ends within 10/15/20 s (-T 2, Gloo's 2 s timeout); compares
  # the set of $TMPDIR/collbench-gloo-np-* and collbench-gloo-mpi-* directories before and after a run, which any
  # other gloo --np or mpirun job running meanwhile changes
  test/cli/gloo-launch.test.ts
  # SIGSTOPs a rank found by `pgrep -f 'all_reduce_perf -b 64K -e 64K -N 0 -T 2'` (machine-wide) and expects the
  # -T 2 watchdog, so no healthy rank may stall 2 s on a busy CPU
  test/cli/behaviour.test.ts
  # compare --timeout 4: the healthy mpirun combinations must finish within 4 s; Ctrl-C test polls for leftovers
  test/cli/compare.test.ts
  test/cli/compare-replay.test.ts
  # network namespaces cblNNNNN-h1..h5 on 10.250.71-79.x, /etc/hosts lines, tc qdiscs; its verdicts compare the busbw
  # of jobs run at the same time, which any other CPU-heavy test running meanwhile distorts
  test/cli/locate-netns.test.ts
  # kill -9 / SIGINT after the first rows of a sweep, progress lines timed on a pseudo-terminal (script(1))
  test/cli/report-run.test.ts
  # a 1.5 ms straggler on 3-4 ranks of 2 cores: another file's ranks beside it stretch every iteration past twice the
  # delay (then nobody is late by half an iteration) and blur the barrier exits that align the clocks
  test/cli/late-rank.test.ts
  # SIGSTOPs a rank and expects the -T 3 watchdog and the survey of progress boards (1.5 s answers) to name it
  test/cli/hung-rank.test.ts
  # sends SIGTERM to a real --np 8 --oversubscribe job and to an mpirun that ignores it, and expects exit 143 within
  # 10 s with nothing left (a loaded CPU stretches the ranks' start past the signal's moment)
  test/cli/launch-stop.test.ts
  # a failing verdict under --np, `| head -1`, --hosts nosuchhost:2: exit codes and the absence of mpirun's banners
  test/cli/launch-outcome.test.ts
  # a 2-rank mpirun sweep of about 2 minutes whose plain progress line must appear every 10 s, and a bar under script(1)
  test/cli/progress-np.test.ts
  # kill -9 of a random rank: the job must end within -T 10 + 5 s, and no process naming its folder may be left
  test/cli/rank-death.test.ts
  # accept's reruns are judged against a baseline saved minutes before (a size regresses at 4x its time): another
  # file's ranks beside a rerun made its 512 KiB rows 4.7x slower (2 of 23 clean-clone runs)
  test/cli/accept.test.ts
  # the executor hands a batch of short calls over in one turn of the event loop within a 250 ms hold while a long
  # call runs: a busy CPU beside it (another file's ranks) delays the courier past the hold and splits the batch
  test/native/executor.test.ts
)

# Every test file; the parallel group is all of them but the serial ones.
mapfile -t all < <(ls test/unit/*.test.ts test/native/*.test.ts test/cli/*.test.ts test/gpu/*.test.ts 2>/dev/null | LC_ALL=C sort)
mapfile -t unit < <(ls test/unit/*.test.ts | LC_ALL=C sort)
# Start order: the longest file first (about 140 s alone), the unit tests beside it (their failures show within
# seconds), then the next longest (85, 80, 50, 26 s), then the rest.
first=(test/cli/gloo-collectives.test.ts "${unit[@]}" test/cli/bundle.test.ts test/cli/gloo-algorithms.test.ts
  test/cli/mpi-collectives.test.ts test/native/pattern.test.ts)
present=()
for f in "${serial[@]}"; do [ -f "$f" ] && present+=("$f"); done  # a file renamed away is not an error here
serial=("${present[@]}")
parallel=()
for f in "${first[@]}" "${all[@]}"; do
  skip=
  for s in "${serial[@]}" "${parallel[@]}"; do [ "$f" = "$s" ] && skip=1 && break; done
  [ -z "$skip" ] && [ -f "$f" ] && parallel+=("$f")
done

declare -A total=([tests]=0 [pass]=0 [fail]=0 [cancelled]=0 [skipped]=0 [todo]=0)
status=0
lines=()

# run NAME CONCURRENCY FILES...: one `node --test` over FILES; adds its closing counts to the totals.
run() {
  local name=$1 conc=$2; shift 2
  [ $# -gt 0 ] || return 0
  local log t0 t1 rc
  log=$(mktemp)
  echo "== $name: $# test file(s), $conc at a time"
  t0=$(date +%s)
  "${node_test[@]}" --test-concurrency="$conc" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  t1=$(date +%s)
  [ "$rc" = 0 ] || status=1
  # The runner's closing counts: "# pass 3" (TAP, when not on a terminal) or "ℹ pass 3" (spec).
  local k n counts=""
  for k in tests pass fail cancelled skipped todo; do
    n=$(grep -aE "^(# |ℹ )$k [0-9]+$" "$log" | tail -n 1 | grep -oE '[0-9]+$')
    total[$k]=$(( ${total[$k]} + ${n:-0} ))
    counts+=" $k ${n:-?}"
  done
  rm -f "$log"
  lines+=("$(printf '%-9s %3d file(s), %d at a time, %4d s:%s (exit %d)' "$name" $# "$conc" $((t1 - t0)) "$counts" "$rc")")
}

case "$what" in
  all) run parallel "$jobs" "${parallel[@]}"; run serial 1 "${serial[@]}" ;;
  unit) run unit "$jobs" "${unit[@]}" ;;
  parallel) run parallel "$jobs" "${parallel[@]}" ;;
  serial) run serial 1 "${serial[@]}" ;;
  list) echo "parallel: ${parallel[*]}"; echo "serial: ${serial[*]}"; exit 0 ;;
  *) echo "usage: $0 [all|unit|parallel|serial|list]" >&2; exit 2 ;;
esac

echo "== summary"
for l in "${lines[@]}"; do echo "$l"; done
echo "tests ${total[tests]}: pass ${total[pass]}, fail ${total[fail]}, cancelled ${total[cancelled]}, skipped ${total[skipped]}, todo ${total[todo]}"
echo "${total[pass]} passed, $(( ${total[fail]} + ${total[cancelled]} )) failed, ${total[skipped]} skipped"
exit "$status"
