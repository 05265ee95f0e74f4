# Part 55 (issue 37): a real NCCL call log replayed. collbench's own nccl run is logged by NCCL itself
# (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL, one file per process); `collbench replay` must read every call line of
# it (as many all_reduce steps as the log has AllReduce call lines), replay it on nccl with no wrong element, and on a
# CPU backend too (a GPU job's trace replays anywhere). The fixtures of test/fixtures/replay/nccl-log-* were written to
# NCCL's format string without a GPU: this is the check against a real log. Then process groups on NCCL
# (ncclCommSplit, never run where it was written): the 4-rank tensor-/data-parallel dump test/fixtures/replay/
# flight-recorder-tp on 4 NCCL ranks of one GPU (torchrun-style through mr-launch.sh, each rank its own NCCL_HOSTID as
# part 60 does), judged by expect.sh: exit 0, the four 2x2 steps (TP groups [0,1] [2,3], DP groups [0,2] [1,3]) and
# the two world steps each with #wrong 0. Last, traces PyTorch itself writes (torch-traces.py, 1 rank on NCCL): its
# flight-recorder dump (pickle; JSON where the torch has it) and its execution trace must read as the 5 x 4 calls it
# issued and replay on nccl. Budget: about 100 s on one H100.
rp_dir="$GC_WORK/replay-log"
if [ "$GC_GPUS" -eq 0 ]; then
  gc_skip "replay of a real NCCL call log (every check)" "collbench sees no GPU ('collbench info': 0 CUDA devices)"
else
  mkdir -p "$rp_dir"
  gc_check "an nccl run logged with NCCL_DEBUG_SUBSYS=INIT,COLL (the log to replay)" 0 '' 60 -- \
    env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL NCCL_DEBUG_FILE="$rp_dir/nccl.%h.%p.log" \
    "$GC_BIN/all_reduce_perf" --backend nccl -b 1K -e 64K -f 4 -n 2 -w 1
  gc_check "replay --dry-run: one all_reduce step per AllReduce call line of the real log" 0 \
    '^replay-log: [1-9][0-9]* steps = [1-9][0-9]* call lines$' 30 -- bash -c \
    'n=$(grep -c " NCCL INFO AllReduce: opCount " "$(ls "$1"/nccl.*.log | head -1)"); # one process'"'"'s calls
     s=$("$2/collbench" replay "$1" --dry-run | grep -cE "^ +[0-9]+  all_reduce ");
     echo "replay-log: $s steps = $n call lines"; [ "$s" = "$n" ]' _ "$rp_dir" "$GC_BIN"
  gc_check "replay of the real log on nccl: every step timed and checked, no wrong element, exit 0" 0 \
    '^# Communication per replayed iteration: ' 60 -- "$GC_BIN/collbench" replay "$rp_dir" --backend nccl -n 5 -w 1
  if gc_usable mpi; then
    gc_check "replay of the real log on mpi (a GPU job's calls on a CPU backend), exit 0" 0 \
      '^# Communication per replayed iteration: ' 60 -- "$GC_BIN/collbench" replay "$rp_dir" --backend mpi -n 5 -w 1
  else
    gc_skip "replay of the real log on mpi" "mpi not usable here (collbench info)"
  fi
fi
rp_tp="$GC_BUNDLE/test/fixtures/replay/flight-recorder-tp" # the built tree's, else the checkout's (a bundle has none)
[ -d "$rp_tp" ] || rp_tp="$(dirname "${BASH_SOURCE[0]}")/../../test/fixtures/replay/flight-recorder-tp"
rp_row='^ +[0-9]+ [a-z_]+ +[a-z0-9]+ +[0-9]+ +[0-9]+ +'
if [ "$GC_GPUS" -eq 0 ]; then
  gc_skip "replay with process groups on nccl (ncclCommSplit)" "collbench sees no GPU"
elif [ ! -d "$rp_tp" ]; then
  gc_skip "replay with process groups on nccl (ncclCommSplit)" "no $rp_tp: give --bundle the built tree"
else
  gc_check "replay of a 4-rank TP x DP flight-recorder dump on 4 nccl ranks (one GPU, ncclCommSplit groups): \
four 2x2 steps and two world steps, each #wrong 0" 0 '^expect: all [0-9]+ met$' 120 -- bash "$GC_EXPECT" \
    -p '^mr: exit 0$' -p '^# Communication per replayed iteration: ' \
    -l "$rp_row"'2x2 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +0  nccl:' 4 \
    -l "$rp_row"'4 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +0  nccl:' 2 \
    -- bash "$(dirname "${BASH_SOURCE[0]}")/mr-launch.sh" -n 4 -e all:NCCL_SOCKET_IFNAME=lo -e all:NCCL_IB_DISABLE=1 \
    -e 0:NCCL_HOSTID=cb37-r0 -e 1:NCCL_HOSTID=cb37-r1 -e 2:NCCL_HOSTID=cb37-r2 -e 3:NCCL_HOSTID=cb37-r3 \
    -- "$GC_BIN/collbench" replay "$rp_tp" --backend nccl -n 3 -w 1
fi
rp_torch="$GC_WORK/replay-torch"
if [ "$GC_GPUS" -eq 0 ]; then
  gc_skip "replay of PyTorch's own traces (flight recorder, execution trace)" "collbench sees no GPU"
elif ! python3 -c 'import torch, torch.distributed' 2>/dev/null; then
  gc_skip "replay of PyTorch's own traces (flight recorder, execution trace)" "python3 has no torch here"
else
  gc_check "PyTorch writes a flight-recorder dump and an execution trace (1 rank, nccl, 4 x 5 collectives)" 0 \
    '^torch-traces: 20 calls$' 90 -- python3 "$(dirname "${BASH_SOURCE[0]}")/torch-traces.py" "$rp_torch" 4
  for rp_kind in fr fr-json et; do
    if [ -z "$(ls -A "$rp_torch/$rp_kind" 2>/dev/null)" ]; then
      gc_skip "replay --dry-run of PyTorch's $rp_kind" "torch wrote none (this torch has no such dump)"
      continue
    fi
    gc_check "replay --dry-run of PyTorch's own $rp_kind: its 20 calls as 20 steps" 0 \
      '^# collbench replay --dry-run: 1 [a-z0-9.-]+ file, 1 ranks, 20 steps' 30 -- \
      "$GC_BIN/collbench" replay "$rp_torch/$rp_kind" --dry-run
  done
  gc_check "replay of PyTorch's flight-recorder dump on nccl, exit 0" 0 '^# Communication per replayed iteration: ' \
    60 -- "$GC_BIN/collbench" replay "$rp_torch/fr" --backend nccl -n 3 -w 1
fi
# GC_ARTIFACTS=DIR (e.g. the device tool's $OUT): the real inputs written above travel back as one tarball, to become
# the replay readers' fixtures (issue 37).
if [ -n "${GC_ARTIFACTS:-}" ]; then
  tar -czf "$GC_ARTIFACTS/replay-inputs.tgz" -C "$GC_WORK" $(cd "$GC_WORK" && ls -d replay-log replay-torch 2>/dev/null) \
    2>/dev/null || true
fi
