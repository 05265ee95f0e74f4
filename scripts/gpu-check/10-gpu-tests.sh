# Part 10: test/gpu/nccl-gpu.test.ts case by case (same names, same expectations), for the GPU machine, which has no
# Node.js to run the test file: every collective -d all -o all on all GPUs with #wrong 0 (pairs the library refuses
# skipped and named), the preamble, the modes, -I, -M, the memory cap, NCCL_TESTS_SPLIT, workload ddp/fsdp. Cases
# that need two GPUs are skipped, saying so, on one. Budget: about 90 s on one H100 (small sizes); change this part
# and the test file together.

gt_case() { # NAME CHECKS... -- PROGRAM ARGS...: one test case, exit 0 and every expectation met
  local name="$1"; shift
  local checks=(); while [ "$1" != "--" ]; do checks+=("$1"); shift; done; shift
  gc_check "$name" 0 '^expect: all [0-9]+ met$' 60 -- bash "$GC_EXPECT" "${checks[@]}" -- "$GC_BIN/$1" --backend nccl "${@:2}"
}

if [ "$GC_GPUS" -eq 0 ]; then
  gc_skip "test/gpu (every case)" "no GPU visible to collbench ('collbench info' shows 0 CUDA devices)"
else
  n="$GC_GPUS"
  gt_case 'preamble: NCCL version and path, one rank line per GPU as nccl-tests prints it' \
    -p '^# collbench version \S+ backend nccl \(NCCL [0-9]+\.[0-9]+\.[0-9]+ /\S*libnccl\.so[.0-9]*\)$' \
    -l '^#  Rank +[0-9]+ Group  0 Pid +[0-9]+ on +\S+ device +[0-9]+ \[[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\] \S' "$n" \
    -- all_reduce_perf -g "$n" -b 8 -e 8

  # every collective the bundle has a program for (its bin/ holds one launcher per collective: bench/core/types.ts
  # PROGRAMS), so a new collective is checked here without a line of its own
  for program in "$GC_BIN"/*_perf; do
    coll=$(basename "$program" _perf)
    name="$coll: -d all -o all, in- and out-of-place, all GPUs, #wrong 0"
    args=(-g "$n" -d all -o all -r -1 -b 8 -e 1M -f 16 -w 1 -n 2 -c 1)
    if [ "$coll" = hypercube ] && [ $((n & (n - 1))) -ne 0 ]; then
      gt_case "$name" -p "nRanks $n is not a power of 2, skipping" -- "${coll}_perf" "${args[@]}"
    else
      # at most one skip line, naming what NCCL refused (ncclInvalidArgument), and none of its pairs in the table
      gt_case "$name" -c -k -n '^# Skipped .* refuses \([^N]' -- "${coll}_perf" "${args[@]}"
    fi
  done

  while IFS='|' read -r mode flags; do
    # shellcheck disable=SC2086  # the flags split on purpose
    gt_case "all_reduce $mode: correct on all GPUs" -c -- all_reduce_perf -g "$n" -b 8 -e 4M -f 8 -o all $flags
  done <<'MODES'
-G 3 (CUDA graph replay)|-G 3
-z 1|-z 1
-z 2|-z 2
-z 3|-z 3
-I 1 (CUDA events)|-I 1
-I 1 -z 3|-I 1 -z 3
-m 4|-m 4
-y 1 (NULL stream)|-y 1
-R 1|-R 1
-R 2|-R 2
-u 3 -c 3|-u 3 -c 3
-C 1 -a 3|-C 1 -a 3
MODES

  gt_case '-I prints the per-iteration columns from CUDA events' \
    -p '^# Per-Iteration Report: CUDA event timing; i_\* uses max over process rows $' -- all_reduce_perf -g "$n" -b 1K -e 1K -I 1
  gt_case '-M prints the GPU memory line' \
    -p '^# GPU memory usage     : Initialization .* \| User-Allocated .* \| Collective .* \| Total  .*$' -- all_reduce_perf -g "$n" -b 1M -e 1M -M 1
  gt_case 'a maximum size beyond GPU memory is reduced, as nccl-tests does' \
    -p '^# Reducing maxBytes to [0-9]+ due to memory limitation$' -- all_reduce_perf -b 1024G -e 1024G -c 0 -n 1 -w 0
  if [ "$n" -lt 2 ]; then gc_skip '-t 2 -g 1 on 2 GPUs: ranks numbered across "threads"' 'needs 2 GPUs'; else
    gt_case '-t 2 -g 1 on 2 GPUs: ranks numbered across "threads"' -c -- all_gather_perf -t 2 -g 1 -b 8 -e 64K -f 8
  fi
  NCCL_TESTS_SPLIT='MOD 1' gt_case 'NCCL_TESTS_SPLIT=MOD 1 with one process: a single group, correct results' -c \
    -- all_reduce_perf -g "$n" -b 8 -e 64K -f 8

  if [ "$n" -lt 2 ]; then gc_skip "torchrun-style: one process per GPU joined by the TCP rendezvous" 'needs 2 GPUs'; else
    cat > "$GC_WORK/torchrun.sh" <<'TORCHRUN'
# two ranks torchrun-style; rank 0's table judged by expect.sh, rank 1 prints nothing; exit: the worse of the two
port=$((20000 + RANDOM % 20000))
pids=()
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$GC_BIN/all_reduce_perf" --backend nccl -b 8 -e 1M -f 8 -o all > "$GC_WORK/torchrun.$r.out" 2>&1 &
  pids+=($!)
done
wait "${pids[0]}"; c0=$?; wait "${pids[1]}"; c1=$?
bash "$1" -c -l '^#  Rank' 2 -- cat "$GC_WORK/torchrun.0.out"
if [ -s "$GC_WORK/torchrun.1.out" ]; then echo "rank 1 printed:"; cat "$GC_WORK/torchrun.1.out"; fi
[ "$c0" = 0 ] && [ "$c1" = 0 ] && [ ! -s "$GC_WORK/torchrun.1.out" ]
TORCHRUN
    gc_check "torchrun-style: one process per GPU joined by the TCP rendezvous" 0 '^expect: all [0-9]+ met$' 60 \
      -- bash "$GC_WORK/torchrun.sh" "$GC_EXPECT"
  fi

  cat > "$GC_WORK/workload.sh" <<'WORKLOAD'
# ddp then fsdp to JSON: exit 0, nranks n, every configuration #wrong 0, its communication time and overlap measured,
# busbw 0 on one GPU (2(n-1)/n = 0) and > 0 on more
n="$1"
for kind in ddp fsdp; do
  json="$GC_WORK/workload-$kind.json"
  "$GC_BIN/collbench" workload "$kind" --params 1e8 --layers 8 --backend nccl -g "$n" --repeats 3 -n 5 --compute-ms 20 \
    -J "$json" --quiet || { echo "$kind: exit $?"; exit 1; }
  grep -Eq "\"nranks\": $n," "$json" || { echo "$kind: nranks is not $n"; exit 1; }
  grep -Eq '"wrong": [1-9]' "$json" && { echo "$kind: #wrong > 0"; exit 1; }
  grep -Eq '"overlapPct": null' "$json" && { echo "$kind: overlap not measured"; exit 1; }
  if [ "$n" = 1 ]; then grep -Eq '"busBwGBps": [^0]' "$json" && { echo "$kind: busbw not 0 on one GPU"; exit 1; }
  else grep -Eq '"busBwGBps": 0,' "$json" && { echo "$kind: busbw 0"; exit 1; }; fi
  echo "$kind: $(grep -c '"label"' "$json") configurations, #wrong 0"
done
echo "workload: ddp and fsdp correct"
WORKLOAD
  gc_check 'collbench workload ddp and fsdp on every visible GPU: the step sequence checked (#wrong 0), overlap measured' 0 \
    '^workload: ddp and fsdp correct$' 120 -- bash "$GC_WORK/workload.sh" "$n"
fi
