# Part 00: the machine is what the other parts assume: collbench sees a GPU and a libnccl, and one all_reduce runs
# on the nccl backend by itself (the new user's first command) with #wrong 0.
gc_check "info: nccl usable" 0 '^  nccl +usable' -- "$GC_BIN/collbench" info
gc_check "all_reduce_perf picks nccl by itself, 8 B-1 MiB" 0 'backend nccl' 120 -- "$GC_BIN/all_reduce_perf" -b 8 -e 1M -f 4
