# Part 50 (issue #28 item 4; budget about 120 s): per-op time of collbench against nccl-tests on this GPU with the same
# libnccl, interleaved (A B, B A, ...), fresh processes, for all_reduce and sendrecv in every mode (out-of-place,
# in-place, -I 1, the 0-byte row, and -C 1: the host's enqueue time alone) from 8 B to 4 MiB: medians over rounds,
# spread, interval, ratio, added us and the goal (<= 1.02x or <= +0.3 us) per size, as a table in the report. Needs --nccl-tests DIR (a build/
# folder of nccl-tests 2.19.6: scripts/bench-gpu/build-nccl-tests.sh makes one); skipped without it.
if [ -z "${GC_NCCL_TESTS:-}" ]; then
  gc_skip "collbench vs nccl-tests per op" "no --nccl-tests DIR (scripts/bench-gpu/build-nccl-tests.sh builds one)"
elif [ -z "$GC_NODE" ]; then
  gc_skip "collbench vs nccl-tests per op" "no node in the bundle or on PATH"
else
  # The rounds stop in time for the whole call's budget (the earlier parts first); under 30 s left, say how to run it alone.
  vs_deadline=$(( $(gc_left) - 25 )); [ "$vs_deadline" -gt 100 ] && vs_deadline=100
  if [ "$vs_deadline" -lt 30 ]; then
    gc_skip "collbench vs nccl-tests per op" "out of budget: run it alone with --only vs-nccl-tests"
  else
    gc_check "collbench vs nccl-tests per op (2 collectives x 4 runs, rounds until ${vs_deadline} s)" 0 'goal .* met at' $((vs_deadline + 30)) -- \
      "$GC_NODE" "$GC_BUNDLE/dist/bin/vs-nccl-tests.js" --nccl-tests "$GC_NCCL_TESTS" --collbench "$GC_BIN" \
      --colls all_reduce,sendrecv --rounds 5 --deadline "$vs_deadline" --timeout 40 --markdown
    gc_table "collbench vs nccl-tests, us per op (scripts/gpu-check/50-vs-nccl-tests.sh)" "$GC_LAST_OUT"
  fi
fi
