# Part 70 (issue #39): collbench's NCCL profiler plugin (--links) names a slow link in one run. Several ranks on one
# GPU, each its own node to NCCL (part 60's way: a distinct NCCL_HOSTID per rank, sockets over lo, launched by part
# 60's mr-launch.sh), so every byte between ranks goes through NCCL's network proxy, whose steps the plugin times.
# One rank's outgoing link is made slow by pacing its TCP sends (links-pace.c, LD_PRELOAD into that rank only).
# Expected: the healthy run names no link; the paced run names that rank's link to its ring successor and no other;
# NCCL's algorithm/protocol/channels per size are printed; a user's NCCL_PROFILER_PLUGIN is left alone in one line.
# The plugin's cost is shown (time per size with and without --links, interleaved, and links-cost.sh's decision
# line for -I 1's default), not judged: ranks on one GPU are time-sliced. Run as its own call: scripts/gpu-check.sh --bundle … --only 70 --budget 240 --out $OUT/gpu-check-70.md
lk_here="${LK_HERE:-$(dirname "${BASH_SOURCE[0]}")}"
lk_launch="$lk_here/mr-launch.sh"
lk_code="$("$GC_BIN/collbench" info 2>/dev/null | sed -n 's/^ *libnccl: NCCL [0-9.]* (\([0-9]*\)).*/\1/p' | head -1)"
lk_shim="$GC_WORK/links-pace.so"
lk_nodes() { # N: each rank its own node (NCCL_HOSTID cb39-rR), sockets on lo, no InfiniBand probe
  local r; printf '%s\n' -e all:NCCL_SOCKET_IFNAME=lo -e all:NCCL_IB_DISABLE=1
  for ((r = 0; r < $1; r++)); do printf '%s\n' -e "$r:NCCL_HOSTID=cb39-r$r"; done
}
lk_run() { # NAME LIMIT N [expect.sh checks] -- [mr-launch options] -- PROGRAM ARGS (the table + exit 0 always expected)
  local name="$1" limit="$2" n="$3"; shift 3
  local expects=(); while [ "$1" != "--" ]; do expects+=("$1"); shift; done; shift
  local opts=(); while [ "$1" != "--" ]; do opts+=("$1"); shift; done; shift
  local nodes; mapfile -t nodes < <(lk_nodes "$n")
  gc_check "$name" 0 '^expect: all [0-9]+ met$' "$limit" -- bash "$GC_EXPECT" -c -p '^mr: exit 0$' "${expects[@]}" \
    -- bash "$lk_launch" -n "$n" "${nodes[@]}" "${opts[@]}" -- "$GC_BIN/$1" --backend nccl "${@:2}"
}
# 4, 8, 16, 32 MiB: bandwidth-bound sizes (the rule counts a link in a row-half from 1 MiB moved).
lk_sizes=(-b 4M -e 32M -f 2 -n 5 -w 1)
lk_ring=(-e all:NCCL_ALGO=Ring -e all:NCCL_PROTO=Simple)
lk_without='NCCL loads one profiler: running without --links$'
lk_named='^# slow link: rank 1 \([^)]*\) -> rank [0-9]+ \([^)]*\), channels? [0-9,]+: '
lk_named+='[0-9.]+ GB/s in SendWait vs [0-9.]+ GB/s median of [0-9]+ other links$'
# The heatmap's row of rank 1 (4 ranks: the # block under the table) with its link starred.
lk_matrix_row='^# +1( +[.0-9]+)* +[0-9.]+\*( +[.0-9]+)*$'

if [ ! -f "$lk_launch" ]; then
  gc_skip "--links (every check)" "no $lk_launch: part 60's launcher (issue #38) is not in this tree"
elif [ -z "$lk_code" ]; then
  gc_skip "--links (every check)" "collbench finds no libnccl (--nccl-lib PATH)"
elif [ "$GC_GPUS" -ne 1 ]; then
  gc_skip "--links (every check)" "$GC_GPUS GPUs: run it with CUDA_VISIBLE_DEVICES=0 (one GPU, ranks as nodes)"
elif [ ! -f "$GC_BUNDLE/build/Release/libcollbench_nccl_profiler.so" ]; then
  gc_skip "--links (every check)" "the bundle has no libcollbench_nccl_profiler.so (make native, make bundle)"
elif ! cc -O2 -shared -fPIC -o "$lk_shim" "$lk_here/links-pace.c" -ldl -lpthread > "$GC_WORK/links-pace.log" 2>&1; then
  gc_skip "--links (every check)" "cannot build the send pacer: $(head -c 200 "$GC_WORK/links-pace.log")"
else
  lk_run "4 ranks, healthy, --links (Ring/Simple): no link named, NCCL's algorithm per size printed" 90 4 \
    -p '^# nccl algo: AllReduce [0-9]+ B RING/SIMPLE [0-9]+ channels? \([0-9]+ calls\)$' \
    -p '^# slow link: none named \(' -n '^# slow link: rank' -n '^# links: ' -- "${lk_ring[@]}" \
    -- all_reduce_perf --links "${lk_sizes[@]}"
  cp "$GC_LAST_OUT" "$GC_WORK/links-healthy.out" 2>/dev/null
  lk_run "4 ranks, rank 1's TCP sends paced to 200 MB/s: its link named in one run, no other" 120 4 \
    -p "$lk_named" -l '^# slow link: rank' 1 -p '^# link matrix \(GB/s in SendWait' -p "$lk_matrix_row" \
    -l '^# .*[0-9]\*' 1 -- "${lk_ring[@]}" -e "1:LD_PRELOAD=$lk_shim" -e 1:CB_LINKS_PACE_MBPS=200 \
    -- all_reduce_perf --links "${lk_sizes[@]}"
  cp "$GC_LAST_OUT" "$GC_WORK/links-paced.out" 2>/dev/null
  lk_run "2 ranks, NCCL_PROFILER_PLUGIN set by the user: one line, run without links" 60 2 \
    -l "^# links: NCCL_PROFILER_PLUGIN is already set \\(/nonexistent/libnccl-profiler-site\\.so\\); $lk_without" 1 \
    -n '^# (slow link|nccl algo):' -- -e all:NCCL_PROFILER_PLUGIN=/nonexistent/libnccl-profiler-site.so \
    -- all_reduce_perf --links -b 1M -e 1M -n 2 -w 1
  lk_run "2 ranks, NCCL's own choice per size from 8 B to 32 MiB (--links)" 60 2 \
    -p '^# nccl algo: AllReduce 8 B [A-Z_]+/[A-Z0-9_]+ [0-9]+ channels? ' \
    -p '^# nccl algo: AllReduce 16777216 B [A-Z_]+/[A-Z0-9_]+ [0-9]+ channels? ' -n '^# links: ' \
    -- -- all_reduce_perf --links -b 8 -e 32M -f 8 -n 5 -w 1
  cp "$GC_LAST_OUT" "$GC_WORK/links-algo.out" 2>/dev/null
  # Cost: 2 ranks, 8 B to 16 MiB, with and without --links, four rounds interleaved (ABBA: a drift cancels), then
  # links-cost.sh: per size the median time and cost, and the rule deciding whether -I 1 turns --links on by default
  # (docs/links.md, "Cost"). Ranks time-slice one GPU here: the figures are shown, and the decision line is printed
  # for the record; the default changes only from a run on real nodes.
  lk_cost="$GC_WORK/links-cost"; rm -rf "$lk_cost"; mkdir -p "$lk_cost"
  for round in 1 2 3 4; do
    order=(without with); [ $((round % 2)) = 0 ] && order=(with without)
    for mode in "${order[@]}"; do
      extra=(); [ "$mode" = with ] && extra=(--links)
      mapfile -t nodes < <(lk_nodes 2)
      timeout -k 5 60 bash "$lk_launch" -n 2 "${nodes[@]}" -- "$GC_BIN/all_reduce_perf" --backend nccl "${extra[@]}" \
        -b 8 -e 16M -f 8 -n 20 -w 5 > "$lk_cost/$round-$mode.out" 2>&1
    done
  done
  gc_check "--links cost, 2 ranks, 8 B-16 MiB, 4 rounds interleaved: per-size cost and the default's decision printed" \
    0 '^expect: all [0-9]+ met$' 30 -- bash "$GC_EXPECT" -p '^ +16777216 B: without [0-9.]+ us, with [0-9.]+ us ' \
    -p '^decision: --links on by default with -I 1: (yes|no) \(' -- bash "$lk_here/links-cost.sh" "$lk_cost"
  grep -E '^( +[0-9]+ B: |decision: )' "$GC_LAST_OUT" > "$GC_WORK/links-cost.txt" 2>/dev/null
  { echo '```'; grep -hE '^# (slow link|nccl algo|links):' "$GC_WORK"/links-{healthy,paced,algo}.out 2>/dev/null
    grep -hE '^# (link matrix|  +[0-9][ .0-9*]*$)' "$GC_WORK/links-paced.out" 2>/dev/null
    cat "$GC_WORK/links-cost.txt"; echo '```'; } > "$GC_WORK/links-table.md"
  gc_table "What --links said (healthy, paced, NCCL's choices); its cost on one GPU (time-sliced: shown, not judged)" \
    "$GC_WORK/links-table.md"
fi
