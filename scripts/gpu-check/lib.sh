# Functions the gpu-check parts use (sourced by scripts/gpu-check.sh, never run alone): each check runs one command
# under a time limit, judges it by exit code and an output pattern, looks for processes it left behind, and appends
# one row (and, when it fails, the output's tail) to the report, which is complete after every check.
GC_START=$(date +%s)
GC_WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")"
GC_PASS=0; GC_FAIL=0; GC_SKIP=0
GC_BIN="$GC_BUNDLE/bin"
GC_EXPECT="$(dirname "${BASH_SOURCE[0]}")/expect.sh" # the parts' judge of several expectations at once
# The GPUs CUDA shows collbench (its `info`: what the runs see, CUDA_VISIBLE_DEVICES applied); 0 without a driver.
GC_GPUS="$("$GC_BIN/collbench" info 2>/dev/null | sed -n 's/^ *CUDA: \([0-9][0-9]*\) device(s).*/\1/p' | head -1)"
GC_GPUS="${GC_GPUS:-0}"
if [ -x "$GC_BUNDLE/node/bin/node" ]; then GC_NODE="$GC_BUNDLE/node/bin/node"; else GC_NODE="$(command -v node || true)"; fi
export GC_BIN GC_NODE GC_WORK

gc_elapsed() { echo $(( $(date +%s) - GC_START )); }
gc_left() { echo $(( GC_BUDGET - $(gc_elapsed) )); }
gc_md() { printf '%s\n' "$@" >> "$GC_OUT"; }
gc_fence() { gc_md '```'; cat "$1" >> "$GC_OUT"; gc_md '```'; }

gc_begin() {
  : > "$GC_OUT" || { echo "gpu-check: cannot write '$GC_OUT'" >&2; exit 2; }
  gc_md "# collbench GPU check, $(date -u +%Y-%m-%dT%H:%MZ)" ""
  gc_md "Command: \`scripts/gpu-check.sh --bundle $GC_BUNDLE${COLLBENCH_NCCL_LIB:+ --nccl-lib $COLLBENCH_NCCL_LIB}${GC_NCCL_TESTS:+ --nccl-tests $GC_NCCL_TESTS}\` (budget ${GC_BUDGET} s)" ""
  gc_md "## Machine" ""
  { uname -srm; (nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv,noheader 2>&1 || echo "nvidia-smi: not found");
    (nvcc --version 2>/dev/null | tail -1) || true; (mpirun --version 2>/dev/null | head -1) || true
    "$GC_BIN/collbench" info 2>&1 | head -40; } > "$GC_WORK/machine.txt"
  gc_fence "$GC_WORK/machine.txt"
}

gc_part() { gc_md "" "## $1" "" "| check | expected | got | s | verdict |" "|---|---|---|---|---|"; }

# gc_check NAME EXPECT_CODE PATTERN [TIMEOUT_S] -- COMMAND...
# EXPECT_CODE: a number, or 'nz' for any non-zero. PATTERN: an extended regex the output (stdout+stderr) must
# match ('' for none); prefix it with '!' for one it must not match. The command's output stays in
# $GC_WORK/<name>.out for the parts' own tables (GC_LAST_OUT).
gc_check() {
  local name="$1" expect="$2" pattern="$3" limit=60; shift 3
  if [ "$1" != "--" ]; then limit="$1"; shift; fi
  shift
  local slug; slug="$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_')"
  GC_LAST_OUT="$GC_WORK/$slug.out"
  # Only a check that can run to its own limit inside the budget starts: the call must end when it says it will.
  if [ "$(gc_left)" -lt "$limit" ]; then gc_skip "$name" "out of budget ($(gc_left) s left, needs $limit): rerun its part with --only"; return 0; fi
  local t0 t1 code verdict=PASS why=""
  t0=$(date +%s.%N)
  timeout -k 5 "$limit" "$@" > "$GC_LAST_OUT" 2>&1; code=$?
  t1=$(date +%s.%N)
  if [ "$code" = 124 ] || [ "$code" = 137 ]; then verdict=FAIL; why="timed out after ${limit} s"
  elif [ "$expect" = nz ] && [ "$code" = 0 ]; then verdict=FAIL; why="exit 0, expected non-zero"
  elif [ "$expect" != nz ] && [ "$code" != "$expect" ]; then verdict=FAIL; why="exit $code, expected $expect"
  elif [ -n "$pattern" ] && [ "${pattern:0:1}" = '!' ] && grep -Eq -- "${pattern:1}" "$GC_LAST_OUT"; then verdict=FAIL; why="output matches /${pattern:1}/"
  elif [ -n "$pattern" ] && [ "${pattern:0:1}" != '!' ] && ! grep -Eq -- "$pattern" "$GC_LAST_OUT"; then verdict=FAIL; why="output lacks /$pattern/"
  fi
  sleep 0.5
  local left; left="$(pgrep -f -- "$GC_BUNDLE/(libexec/|node/bin/node |bin/|dist/bin/)" | grep -v "^$$\$" || true)"
  if [ -n "$left" ]; then verdict=FAIL; why="${why:+$why; }processes left: $(echo $left)"; pkill -9 -f -- "$GC_BUNDLE/(libexec/|node/bin/node |bin/|dist/bin/)" || true; fi
  local secs; secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  gc_md "| $name | $expect${pattern:+ /$pattern/} | $code | $secs | $verdict${why:+: $why} |"
  echo "gpu-check: $verdict $name ($code, ${secs} s)${why:+: $why}" >&2
  if [ "$verdict" = PASS ]; then GC_PASS=$((GC_PASS + 1)); else
    GC_FAIL=$((GC_FAIL + 1))
    GC_FAILED_DETAILS+=$'\n'"### $name"$'\n\n'"\`$*\`"$'\n\n```\n'"$(tail -c 3000 "$GC_LAST_OUT")"$'\n```\n'
  fi
  return 0
}

# gc_usable BACKEND: `collbench info` says the backend can run here (the bundle ships the mpi and gloo modules, not
# their libraries: a GPU node may lack Open MPI).
gc_usable() { "$GC_BIN/collbench" info 2>/dev/null | grep -Eq "^  $1 +usable"; }

gc_skip() { gc_md "| $1 | | | | SKIP: $2 |"; GC_SKIP=$((GC_SKIP + 1)); echo "gpu-check: SKIP $1: $2" >&2; }

# gc_table TITLE FILE: a part's own table or text (already Markdown), after the part's check rows.
gc_table() { GC_TABLES+=$'\n'"### $1"$'\n\n'"$(cat "$2")"$'\n'; }

gc_end() {
  [ -n "${GC_TABLES:-}" ] && gc_md "" "## Tables" "$GC_TABLES"
  [ -n "${GC_FAILED_DETAILS:-}" ] && gc_md "" "## Failures" "$GC_FAILED_DETAILS"
  gc_md "" "## Summary" "" "$GC_PASS passed, $GC_FAIL failed, $GC_SKIP skipped in $(gc_elapsed) s."
  echo "gpu-check: $GC_PASS passed, $GC_FAIL failed, $GC_SKIP skipped in $(gc_elapsed) s; report: $GC_OUT" >&2
  rm -rf "$GC_WORK"
  [ "$GC_FAIL" = 0 ]
}
