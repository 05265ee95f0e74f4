# Part 50 (issue #28 item 4; budget about 120 s): per-op time of collbench against nccl-tests on this GPU with the same
# libnccl, interleaved (A B, B A, ...), fresh processes, for all_reduce and sendrecv in every mode (out-of-place,
# in-place, -I 1, the 0-byte row, and -C 1: the host's enqueue time alone) from 8 B to 4 MiB: medians over rounds,
# spread, interval, ratio, added us and the goal (<= 1.02x or <= +0.3 us) per size, as a table in the report. Needs --nccl-tests DIR (a build/
# folder of nccl-tests 2.19.6: scripts/bench-gpu/build-nccl-tests.sh makes one); skipped without it.
if [ -z "${GC_NCCL_TESTS:-}" ]; then
  gc_skip "collbench vs nccl-tests per op" "no --nccl-tests DIR (scripts/bench-gpu/build-nccl-tests.sh builds one)"
else
  gc_check "collbench vs nccl-tests per op (2 collectives x 4 runs, rounds until 100 s)" 0 'goal .* met at' 130 -- \
    "$GC_NODE" "$GC_BUNDLE/dist/bin/vs-nccl-tests.js" --nccl-tests "$GC_NCCL_TESTS" --collbench "$GC_BIN" \
    --colls all_reduce,sendrecv --rounds 5 --deadline 100 --timeout 40 --markdown
  gc_table "collbench vs nccl-tests, us per op (scripts/gpu-check/50-vs-nccl-tests.sh)" "$GC_LAST_OUT"
fi
