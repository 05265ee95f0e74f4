# Part 60 (issue #38): several NCCL ranks on one GPU, each its own "node" to NCCL (a distinct NCCL_HOSTID per rank;
# the network transport over NCCL_SOCKET_IFNAME=lo), so that NCCL's inter-node path runs on one GPU: the refusal
# without host ids, correctness, the late, hung, dead and failing rank, compare's NCCL choices, MPS, locate over
# network namespaces, and with NCCL >= 2.30 NCCL_MULTI_RANK_GPU_ENABLE=1. Run as its own call:
#   scripts/gpu-check.sh --bundle … --only 60 --budget 290 --out $OUT/gpu-check-60.md
# MR_CHECKS=basic,late,hung,dead,bringup,modes,coll4,compare,coll2,mps,switch,locate picks groups (default: all, in
# this order; a group the budget cuts off is a SKIP row: rerun it with MR_CHECKS). RAS replies and the late rank's
# trace are kept beside the report (multirank/) as fixtures. Processes on one GPU are time-sliced unless MPS runs:
# behaviour is judged, times are only shown.
mr_here="${MR_HERE:-$(dirname "${BASH_SOURCE[0]}")}"
MR_LAUNCH="$mr_here/mr-launch.sh"; MR_JUDGE="$mr_here/mr-judge.sh"
mr_keep="$(cd "$(dirname "$GC_OUT")" && pwd)/multirank"
mr_code="$("$GC_BIN/collbench" info 2>/dev/null | sed -n 's/^ *libnccl: NCCL [0-9.]* (\([0-9]*\)).*/\1/p' | head -1)"
mr_checks=",${MR_CHECKS:-basic,late,hung,dead,bringup,modes,coll4,compare,coll2,mps,switch,locate},"
mr_want() { [[ "$mr_checks" == *",$1,"* ]]; }
# The ranks' common variables: each rank its own node (NCCL_HOSTID cb38-rR), sockets on lo, no InfiniBand probe.
mr_nodes() { # N: mr-launch.sh options
  local r; printf '%s\n' -e all:NCCL_SOCKET_IFNAME=lo -e all:NCCL_IB_DISABLE=1
  for ((r = 0; r < $1; r++)); do printf '%s\n' -e "$r:NCCL_HOSTID=cb38-r$r"; done
}
mr_run() { # NAME LIMIT N [mr-launch options] -- PROGRAM ARGS: expect.sh -c -p 'mr: exit 0' over the launcher
  local name="$1" limit="$2" n="$3"; shift 3
  local opts=(); while [ "$1" != "--" ]; do opts+=("$1"); shift; done; shift
  local nodes; mapfile -t nodes < <(mr_nodes "$n")
  gc_check "$name" 0 '^expect: all [0-9]+ met$' "$limit" -- bash "$GC_EXPECT" -c -p '^mr: exit 0$' "${MR_EXPECT[@]}" \
    -- bash "$MR_LAUNCH" -n "$n" "${nodes[@]}" "${opts[@]}" -- "$GC_BIN/$1" --backend nccl "${@:2}"
}
mr_judged() { # NAME LIMIT JUDGE [JUDGE ARGS] -- N [mr-launch options] -- PROGRAM ARGS
  local name="$1" limit="$2"; shift 2
  local judge=(); while [ "$1" != "--" ]; do judge+=("$1"); shift; done; shift
  local n="$1"; shift
  local opts=(); while [ "$1" != "--" ]; do opts+=("$1"); shift; done; shift
  local nodes; mapfile -t nodes < <(mr_nodes "$n")
  gc_check "$name" 0 '^judge: ok' "$limit" -- bash "$MR_JUDGE" "${judge[@]}" \
    -- bash "$MR_LAUNCH" -n "$n" "${nodes[@]}" "${opts[@]}" -- "$GC_BIN/$1" --backend nccl "${@:2}"
}
mr_passed() { [ "$GC_FAIL" = "$1" ]; } # no check failed since GC_FAIL was $1
# The rank lines of N ranks sharing the one GPU, each its own node (expect.sh -l); rank 0 prints them all.
mr_shared() { printf '%s\n' -l '^#  Rank +[0-9]+ .* \(round-robin over 1 GPU: own node, NCCL_HOSTID=cb38-r[0-9]\)$' "$1"; }
mr_oneline() { head -c 200 "$1" | tr '\n' ' '; }

if [ -z "$mr_code" ]; then
  gc_skip "several ranks on one GPU (every check)" "collbench finds no libnccl (--nccl-lib PATH)"
elif [ "$GC_GPUS" -eq 0 ]; then
  gc_skip "several ranks on one GPU (every check)" "collbench sees no GPU ('collbench info': 0 CUDA devices)"
elif [ "$GC_GPUS" -gt 1 ]; then
  gc_skip "several ranks on one GPU (every check)" "$GC_GPUS GPUs: run it with CUDA_VISIBLE_DEVICES=0"
else
  mkdir -p "$mr_keep"
  MR_EXPECT=()
  mr_ok=1
  if mr_want basic; then
    f0=$GC_FAIL
    # Without host ids (and without the 2.30 switch) rank 1 has no GPU of its own: one line naming both ways out.
    mr_refusal='Invalid number of GPUs: 2 requested but only 1 were found .*NCCL_MULTI_RANK_GPU_ENABLE=1 '
    mr_refusal+='\(NCCL 2\.30 or newer\) or a distinct NCCL_HOSTID per rank'
    gc_check "2 ranks, no host ids: both refused at once in one line each naming both ways out, exit 5" \
      nz '^expect: all [0-9]+ met$' 30 -- bash "$GC_EXPECT" -p '^mr: rank 1 exit 5 ' -p '^mr: rank 0 exit 5 ' \
      -l '^\[rank 1\] ' 1 \
      -p "^\[rank 1\] .*$mr_refusal" -- bash "$MR_LAUNCH" -n 2 -g 15 -- "$GC_BIN/all_reduce_perf" --backend nccl \
      -b 8 -e 8 -T 10
    gc_check "-g 2 in one process on one GPU without the switch: refused in one line, exit 5" 5 "$mr_refusal" 30 \
      -- "$GC_BIN/all_reduce_perf" --backend nccl -g 2 -b 8 -e 8
    mapfile -t MR_EXPECT < <(mr_shared 2)
    mr_run "2 ranks, one GPU, per-rank NCCL_HOSTID: all_reduce 8 B-1 MiB #wrong 0, rank lines say the GPU is shared" \
      45 2 -- all_reduce_perf -b 8 -e 1M -f 32 -n 2 -w 1
    cp "$GC_LAST_OUT" "$mr_keep/2ranks-all_reduce.out" 2>/dev/null
    mapfile -t MR_EXPECT < <(mr_shared 4)
    mr_run "4 ranks, one GPU: all_reduce 8 B-1 MiB #wrong 0 (time-sliced: the times are shown, not judged)" \
      60 4 -- all_reduce_perf -b 8 -e 1M -f 32 -n 5 -w 2
    cp "$GC_LAST_OUT" "$GC_WORK/mr-nomps.out" 2>/dev/null
    MR_EXPECT=()
    if ! mr_passed "$f0"; then mr_ok=0; fi
  fi
  mr_gate() { # GROUP: run it, or say why not
    if ! mr_want "$1"; then return 1; fi
    if [ "$mr_ok" = 0 ]; then
      gc_skip "$1 (several ranks on one GPU)" "the basic runs failed above: see their rows"; return 1
    fi
    return 0
  }

  if mr_gate late; then
    rm -f "$mr_keep/late-trace.jsonl"
    # The delay is sized from the healthy 4-rank run above: 3x its slowest op, at least 2 ms. Time-sliced ranks take
    # 18-27 ms per op on one H100 (measured 2026-11-28), and a fixed 2 ms delay was lost in that.
    mr_delay="$(awk '$1 ~ /^[0-9]+$/ && $6 + 0 > m { m = $6 + 0 } END { d = int(3 * m); print (d > 2000 ? d : 2000) }' \
      "$GC_WORK/mr-nomps.out" 2>/dev/null || echo 2000)"
    mr_judged "late rank: ${mr_delay} us device delay (3x the healthy op) on rank 2 of 4 (-I 1 -z 0): named with its \
GPU by device arrivals, not by host enqueue" 90 late 2 "$mr_keep/late-trace.jsonl" "$GC_BUNDLE/dist/numbers/lateness.js" \
      -- 4 -e "all:COLLBENCH_TEST_GPU_DELAY=$mr_delay:all:2" -e "0:COLLBENCH_ARRIVAL_TRACE=$mr_keep/late-trace.jsonl" \
      -- all_reduce_perf -b 1K -e 64K -f 8 -n 20 -w 2 -z 0 -I 1
  fi

  if mr_gate hung; then
    rm -f "$mr_keep/hung.json"
    mr_judged "hung rank: SIGSTOP rank 2 of 4 mid-run, -T 10: named within T + 5 s, NCCL RAS's view printed and in -J" \
      60 hung 2 10 "$mr_keep/hung.json" \
      -- 4 -w '^ +[0-9]+ +[0-9]+ ' -s 2:STOP:3 -c "5:1:$mr_keep/ras-missing-rank" -g 30 \
      -- all_reduce_perf -b 8 -e 64M -f 4 -n 100 -w 1 -T 10 -J "$mr_keep/hung.json"
  fi

  if mr_gate dead; then
    mr_judged "dead rank: kill -9 rank 2 of 4 mid-run (-T 60): every other rank ends within 10 s, none left" \
      60 dead 2 10 -- 4 -w '^ +[0-9]+ +[0-9]+ ' -s 2:KILL:3 -c "1:0:$mr_keep/ras-dead-peer" -g 30 \
      -- all_reduce_perf -b 8 -e 64M -f 4 -n 100 -w 1 -T 60
  fi

  if mr_gate bringup; then
    mr_judged "bring-up: a wrong NCCL_SOCKET_IFNAME on rank 0 of 4: no unique id, every rank's reason, no hang" \
      40 bringup 0 10 -- 4 -e 0:NCCL_SOCKET_IFNAME=cb38nosuch0 -g 15 -- all_reduce_perf -b 8 -e 8 -T 10
    mr_judged "bring-up: a wrong NCCL_SOCKET_IFNAME on rank 2 of 4 (-T 10): every rank's reason, no hang" \
      40 bringup 2 10 -- 4 -e 2:NCCL_SOCKET_IFNAME=cb38nosuch0 -g 15 -- all_reduce_perf -b 8 -e 8 -T 10
  fi

  if mr_gate modes; then
    mr_run "4 ranks: all_reduce -R 1 (registered buffers) #wrong 0" 40 4 \
      -- all_reduce_perf -b 8 -e 1M -f 32 -R 1 -n 2 -w 1
    mr_run "4 ranks: all_reduce -z 1 (blocking) #wrong 0" 40 4 -- all_reduce_perf -b 8 -e 1M -f 32 -z 1 -n 2 -w 1
    mr_run "4 ranks: gather -r 2 #wrong 0" 40 4 -- gather_perf -b 8 -e 64K -f 32 -r 2 -n 2 -w 1
    mr_run "4 ranks: alltoallv #wrong 0" 40 4 -- alltoallv_perf -b 8 -e 64K -f 32 -n 2 -w 1
  fi

  mr_colls() { # N: all 11 collectives, -d all -o all, one small size; pairs NCCL refuses skipped and named
    local n="$1" coll roots=(-r -1)
    # Every root at 2 ranks; one (not 0) at 4, where time-sliced ops take ~25 ms and reduce over 4 roots passed 40 s.
    [ "$n" -gt 2 ] && roots=(-r 1)
    for coll in all_reduce all_gather alltoall alltoallv broadcast gather hypercube reduce reduce_scatter scatter \
      sendrecv; do
      MR_EXPECT=(-k -n '^# Skipped .* refuses \([^N]')
      mr_run "$n ranks, one GPU: $coll -d all -o all ${roots[*]}, 1 KiB, #wrong 0" 40 "$n" -- "${coll}_perf" -d all \
        -o all "${roots[@]}" -b 1K -e 1K -n 1 -w 1
    done
    MR_EXPECT=()
  }
  if mr_gate coll4; then mr_colls 4; fi

  if mr_gate compare; then
    if ! command -v mpirun > /dev/null || ! gc_usable mpi; then
      gc_skip "compare NCCL_ALGO x NCCL_PROTO on 4 ranks" "--np needs mpirun and a usable mpi backend (collbench info)"
    else
      gc_check "compare NCCL_ALGO=Ring,Tree x NCCL_PROTO=LL,LL128,Simple, 4 ranks on one GPU (--np 4, \
COLLBENCH_NCCL_HOSTID_PER_RANK=1): a verdict and NCCL's choice per size" 0 '^judge: ok' 150 \
        -- bash "$MR_JUDGE" choices -- env COLLBENCH_NCCL_HOSTID_PER_RANK=1 NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 \
        "$GC_BIN/collbench" compare --env NCCL_ALGO=Ring,Tree --env NCCL_PROTO=LL,LL128,Simple --repeats 1 \
        --timeout 60 --reports-dir "$mr_keep/compare" \
        -- all_reduce_perf --backend nccl --np 4 -b 1K -e 16M -f 16 -n 5 -w 2
      grep -E '^#' "$GC_LAST_OUT" > "$GC_WORK/mr-compare.txt" 2>/dev/null
      { echo '```'; cat "$GC_WORK/mr-compare.txt"; echo '```'; } > "$GC_WORK/mr-compare.md"
      gc_table "compare on 4 ranks of one GPU: NCCL_ALGO x NCCL_PROTO, NCCL's choice per size" "$GC_WORK/mr-compare.md"
    fi
  fi

  if mr_gate coll2; then mr_colls 2; fi

  if mr_gate mps; then
    if ! command -v nvidia-cuda-mps-control > /dev/null; then
      gc_skip "4 ranks under CUDA MPS" "no nvidia-cuda-mps-control on this machine"
    else
      export CUDA_MPS_PIPE_DIRECTORY="$GC_WORK/mps-pipe" CUDA_MPS_LOG_DIRECTORY="$GC_WORK/mps-log"
      mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
      if nvidia-cuda-mps-control -d > "$GC_WORK/mps-start.txt" 2>&1; then
        mapfile -t MR_EXPECT < <(mr_shared 4)
        mr_run "4 ranks under CUDA MPS: all_reduce 8 B-1 MiB #wrong 0" 60 4 \
          -- all_reduce_perf -b 8 -e 1M -f 32 -n 5 -w 2
        cp "$GC_LAST_OUT" "$GC_WORK/mr-mps.out" 2>/dev/null
        MR_EXPECT=()
        echo quit | timeout 10 nvidia-cuda-mps-control > /dev/null 2>&1
        sleep 1
        if pgrep -f nvidia-cuda-mps-server > /dev/null; then
          gc_skip "MPS shut down" "nvidia-cuda-mps-server still runs after quit"; fi
      else
        gc_skip "4 ranks under CUDA MPS" "nvidia-cuda-mps-control -d refused: $(mr_oneline "$GC_WORK/mps-start.txt")"
      fi
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
      { echo "| size (B) | time-sliced (us, out-of-place) | MPS (us, out-of-place) |"; echo "|---:|---:|---:|"
        awk 'FNR == 1 { f++ }
             /^ +[0-9]+ +[0-9]+ +float +sum/ { t[f, $1] = $6; if (!($1 in seen)) { seen[$1] = 1; s[++n] = $1 } }
             END { for (i = 1; i <= n; i++) printf "| %s | %s | %s |\n", s[i], t[1, s[i]], t[2, s[i]] }' \
          "$GC_WORK/mr-nomps.out" "$GC_WORK/mr-mps.out" 2>/dev/null; } > "$GC_WORK/mr-mps.md"
      gc_table "4 ranks on one GPU: all_reduce time per op, time-sliced and under MPS (behaviour is judged, not \
these)" "$GC_WORK/mr-mps.md"
    fi
  fi

  if mr_gate switch; then
    if [ "$mr_code" -lt 23000 ]; then
      gc_skip "NCCL_MULTI_RANK_GPU_ENABLE=1 (2 ranks, and -g 2 in one process)" \
        "the loaded NCCL ($mr_code) predates 2.30; give --nccl-lib a 2.30+ libnccl"
    else
      MR_EXPECT=(-l '^#  Rank +[0-9]+ .* \(round-robin over 1 GPU: NCCL_MULTI_RANK_GPU_ENABLE=1\)$' 2)
      gc_check "NCCL_MULTI_RANK_GPU_ENABLE=1, 2 ranks on one GPU (one node): all_reduce #wrong 0" \
        0 '^expect: all [0-9]+ met$' 45 -- bash "$GC_EXPECT" -c -p '^mr: exit 0$' "${MR_EXPECT[@]}" \
        -- bash "$MR_LAUNCH" -n 2 -e all:NCCL_MULTI_RANK_GPU_ENABLE=1 \
        -- "$GC_BIN/all_reduce_perf" --backend nccl -b 8 -e 1M -f 32 -n 2 -w 1
      gc_check "NCCL_MULTI_RANK_GPU_ENABLE=1, -g 2 in one process on one GPU: all_reduce #wrong 0" \
        0 '^expect: all [0-9]+ met$' 45 -- env NCCL_MULTI_RANK_GPU_ENABLE=1 bash "$GC_EXPECT" -c "${MR_EXPECT[@]}" \
        -- "$GC_BIN/all_reduce_perf" --backend nccl -g 2 -b 8 -e 1M -f 32 -n 2 -w 1
      MR_EXPECT=()
    fi
  fi

  if mr_gate locate; then
    mr_ns="$here/netns-hosts.sh" mr_subnet=$((90 + RANDOM % 9)) mr_name="locate over 4 network-namespace hosts"
    if ! command -v mpirun > /dev/null || ! gc_usable mpi; then
      gc_skip "$mr_name" "locate starts its jobs with mpirun: no mpirun or no usable mpi backend"
    elif ! "$mr_ns" up 4 cb38 "$mr_subnet" > "$GC_WORK/mr-netns.txt" 2>&1; then
      gc_skip "$mr_name" "network namespaces refused here: $(tail -2 "$GC_WORK/mr-netns.txt" | mr_oneline /dev/stdin)"
      "$mr_ns" down cb38 > /dev/null 2>&1
    else
      if "$mr_ns" exec cb38-h3 tc qdisc add dev eth0 root tbf rate 200mbit burst 32kbit latency 400ms \
        > "$GC_WORK/mr-tc.txt" 2>&1; then
        mapfile -t mr_mpi < <("$mr_ns" mpi-env "$mr_subnet"); rm -f "$mr_keep/locate.json"
        gc_check "$mr_name on NCCL (one rank each, the GPU shared), cb38-h3's link at 200 Mbit/s: h3 named" \
          0 '^judge: ok' 150 -- bash "$MR_JUDGE" locate cb38-h3 \
          -- env "${mr_mpi[@]}" OMPI_MCA_plm=rsh NCCL_SOCKET_IFNAME=eth0 NCCL_IB_DISABLE=1 \
          "$GC_BIN/collbench" locate --hosts cb38-h1,cb38-h2,cb38-h3,cb38-h4 --margin 50 --max-noise 80 \
          -J "$mr_keep/locate.json" -- --backend nccl -b 4M -e 4M -n 8
      else
        gc_skip "$mr_name" "tc refused in the namespace: $(mr_oneline "$GC_WORK/mr-tc.txt")"
      fi
      "$mr_ns" down cb38 > /dev/null 2>&1
    fi
  fi

  # The RAS replies captured while a rank was stopped or dead: parsed by collbench's own parser, kept as fixtures.
  if [ -n "$GC_NODE" ] && ls "$mr_keep"/ras-*/*.txt > /dev/null 2>&1; then
    gc_check "captured RAS replies (missing rank, dead peer) parse with collbench's parser" \
      0 '^ras fixtures: [0-9]+ parsed' 20 -- "$GC_NODE" --input-type=module -e '
        const [dist, ...files] = process.argv.slice(1);
        const ras = await import(`${dist}/backends/nccl-ras.js`);
        const { readFileSync } = await import("node:fs");
        let n = 0, bad = 0;
        for (const f of files) {
          const text = readFileSync(f, "utf8"), body = text.split("\n").filter((l) => !/^[<>#]/.test(l)).join("\n");
          if (!body.trim()) { console.log(`${f}: no reply (${text.trim().split("\n").pop()})`); continue; }
          try {
            const view = f.endsWith(".json.txt") ? ras.parseRasJson(body) : ras.parseRasText(body);
            console.log(`${f}:`); for (const l of ras.describeRasView(view, "127.0.0.1")) console.log(`  ${l}`); n++;
          } catch (e) { console.log(`${f}: NOT PARSED: ${e.message}`); bad++; }
        }
        process.exitCode = bad ? 1 : 0;
        console.log(`ras fixtures: ${n} parsed of ${files.length}`);' "$GC_BUNDLE/dist" "$mr_keep"/ras-*/*.txt
    [ -f "$GC_LAST_OUT" ] && gc_table "NCCL RAS while a rank was stopped (ras-missing-rank) and after one was killed \
(ras-dead-peer)" <(echo '```'; cat "$GC_LAST_OUT"; echo '```')
    # One file, so that the device tool brings the replies back (it returns files at most two folders down).
    tar -czf "$mr_keep/ras-replies.tgz" -C "$mr_keep" $(cd "$mr_keep" && ls -d ras-*/) 2>/dev/null || true
  fi
fi
