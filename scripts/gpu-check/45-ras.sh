# Part 45 (about 20 s of its 5 minutes): NCCL's RAS view beside the watchdog's verdict (issue 29 item 4) on one GPU.
# One rank cannot wait on another, so the wait that expires is a long one: a 256 MiB all_reduce timed for 1,000,000
# iterations (minutes) under -T 4. At expiry collbench asks the RAS service of its own live NCCL process
# (localhost:28028), prints NCCL's view after the timeout line and records it in the -J report's `timeout`: the
# client, the protocol and the parser against the real service (NCCL >= 2.28.7 answers JSON). A one-rank
# communicator has no counts and nothing missing, so the view says so; missing ranks and MISMATCH need 2+ GPUs.
# The second run has NCCL_RAS_ENABLE=0: one line says RAS is off, the rest of the expiry is unchanged.
ras_json="$GC_WORK/ras-report.json"
gc_check "expiry on nccl: RAS view printed and in the report" 4 '^# NCCL RAS at localhost:28028 \(NCCL [0-9.]+, (json|text)' 40 -- \
  sh -c '"$1/all_reduce_perf" --backend nccl -b 256M -e 256M -n 1000000 -w 1 -T 4 -J "$2"; c=$?
         grep -q "\"source\": \"NCCL RAS\"" "$2" && grep -q "\"state\": \"answered\"" "$2" || { echo "report: no answered RAS view"; c=98; }
         exit $c' sh "$GC_BIN" "$ras_json"
grep -E 'Test timeout|^# NCCL RAS|^#   (comm|INCOMPLETE|DEAD|ERROR|MISMATCH|TIMEOUT)' "$GC_LAST_OUT" > "$GC_WORK/ras-lines.txt" || true
{ echo '```'; cat "$GC_WORK/ras-lines.txt"; echo '```'; } > "$GC_WORK/ras-table.md"
gc_table "What NCCL RAS said at the expiry" "$GC_WORK/ras-table.md"
gc_check "expiry with NCCL_RAS_ENABLE=0: one line, RAS off" 4 '^# NCCL RAS: off \(NCCL_RAS_ENABLE=0\)' 40 -- \
  env NCCL_RAS_ENABLE=0 "$GC_BIN/all_reduce_perf" --backend nccl -b 256M -e 256M -n 1000000 -w 1 -T 4
