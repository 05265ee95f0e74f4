# Part 20 (issue 28 item 1; budget about 40 s): a rank that fails in bring-up ends the job at once. On a machine
# with one GPU, `--np 2` gives rank 1 no device 1: it must say so (rank and host named) and the job exit 5 within
# seconds, with or without -T, nothing left; it once printed nothing and ran past 40 s. Then a rank 0 whose peer
# fails after the rendezvous waits in ncclCommInitRank for it: -T 5 must end it (exit 4) with the bring-up named.
if [ "$GC_GPUS" != 1 ]; then
  gc_skip "bring-up failure on rank 1 (--np 2)" "needs a machine with exactly one GPU (found $GC_GPUS)"
else
  why='rank 1 on host [^:]+: .*(CUDA_TOO_FEW_DEVICES|Invalid number of GPUs)'
  if command -v mpirun > /dev/null && gc_usable mpi; then # nccl --np starts its ranks with mpirun, and they meet over MPI
    gc_check "--np 2 on one GPU: exit 5, rank 1's reason" 5 "$why" 15 -- \
      "$GC_BIN/all_reduce_perf" --backend nccl --np 2 -b 8 -e 8
    gc_check "--np 2 -T 10 on one GPU: exit 5, rank 1's reason" 5 "$why" 15 -- \
      "$GC_BIN/all_reduce_perf" --backend nccl --np 2 -b 8 -e 8 -T 10
  else
    gc_skip "bring-up failure on rank 1 (--np 2)" "no mpirun or no usable mpi backend here (collbench info)"
  fi
  port=$((20000 + RANDOM % 20000))
  rendezvous=(WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port")
  env "${rendezvous[@]}" RANK=1 LOCAL_RANK=1 "$GC_BIN/all_reduce_perf" --backend nccl -b 8 -e 8 > "$GC_WORK/bringup-rank1.out" 2>&1 &
  rank1=$!
  gc_check "torchrun-style, rank 1 fails after the rendezvous: rank 0 ends at -T 5 (exit 4)" 4 \
    'Test timeout \(5s\) in the NCCL bring-up' 20 -- \
    env "${rendezvous[@]}" RANK=0 LOCAL_RANK=0 "$GC_BIN/all_reduce_perf" --backend nccl -b 8 -e 8 -T 5
  wait "$rank1" || true
fi
