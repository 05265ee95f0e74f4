# Part 40 (issue 29 items 2-3): device-side arrivals on one GPU. Budget about 50 s (7 short runs).
# Item 2: all_reduce 8 B-1 GiB (-f 8) with no -I, with -I 1, and with -I 1 plus arrivals recorded (COLLBENCH_ARRIVAL_TRACE
# forces them at one rank): the out-of-place time side by side, so the cost of arrival evidence in docs/reliability.md is a measurement.
# Item 3: 256 MiB at -z 0 -I 1, COLLBENCH_TEST_GPU_DELAY=D:10 (a spin kernel of D us before iteration 10's mark), D = 50,
# 500, 5000: the device arrival's step into iteration 10 exceeds the median step by D within 10 us + 2 % of D, while
# the host enqueue step into iteration 10 stays within 20 us of its median (the host runs ahead of the GPU).
arrival_sweep() {  # NAME OUTFILE ENV... -- ARGS: one sweep 8 B-1 GiB, its output kept as OUTFILE
  local name="$1" keep="$2"; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  gc_check "arrival cost: $name" 0 '^# Out of bounds values : 0 OK' 60 -- \
    env "${envs[@]}" "$GC_BIN/all_reduce_perf" --backend nccl -b 8 -e 1G -f 8 -n 50 -w 10 "$@"
  cp "$GC_LAST_OUT" "$keep" 2>/dev/null || true
}
arrival_sweep "no -I" "$GC_WORK/arr-off.txt" COLLBENCH_ARRIVAL_TRACE= --
arrival_sweep "-I 1" "$GC_WORK/arr-i.txt" COLLBENCH_ARRIVAL_TRACE= -- -I 1
arrival_sweep "-I 1 + arrivals" "$GC_WORK/arr-on.txt" "COLLBENCH_ARRIVAL_TRACE=$GC_WORK/sweep-trace.jsonl" -- -I 1
{
  echo "| size (B) | no -I (us) | -I 1 (us) | -I 1 + arrivals (us) | -I 1 + arrivals / no -I |"
  echo "|---:|---:|---:|---:|---:|"
  awk 'FNR == 1 { f++ } /^ *[0-9]/ { t[f, $1] = $6; if (f == 1) s[++n] = $1 }
       END { for (i = 1; i <= n; i++) { k = s[i]; r = t[1, k] > 0 ? t[3, k] / t[1, k] : 0
             printf "| %s | %s | %s | %s | %.3f |\n", k, t[1, k], t[2, k], t[3, k], r } }' \
    "$GC_WORK/arr-off.txt" "$GC_WORK/arr-i.txt" "$GC_WORK/arr-on.txt"
} > "$GC_WORK/arrival-cost.md"
gc_table "Arrival evidence: out-of-place time with and without it (all_reduce, -n 50)" "$GC_WORK/arrival-cost.md"

for d in 50 500 5000; do
  rm -f "$GC_WORK/delay-$d.jsonl"
  gc_check "arrival delay D=$d us" 0 '^# Out of bounds values : 0 OK' 60 -- \
    env "COLLBENCH_ARRIVAL_TRACE=$GC_WORK/delay-$d.jsonl" "COLLBENCH_TEST_GPU_DELAY=$d:10" \
    "$GC_BIN/all_reduce_perf" --backend nccl -b 256M -e 256M -n 20 -w 5 -z 0 -I 1
done
cat > "$GC_WORK/arrival-proof.mjs" <<'EOF'
// Reads delay-D.jsonl (one line per row-half: deviceUs per rank, hostUs per process) and prints the proof table.
import { readFileSync, existsSync } from 'node:fs';
const dir = process.argv[2], k = 10;
const median = (v) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const jump = (row) => { const steps = row.slice(1).map((t, i) => t - row[i]); const others = steps.filter((_, i) => i !== k - 1);
  return steps[k - 1] - median(others); };
let bad = 0, rows = 0;
console.log('| D (us) | placement | device step into iteration 10 - median step (us) | host enqueue step - median (us) | verdict |');
console.log('|---:|---|---:|---:|---|');
for (const d of [50, 500, 5000]) {
  const file = `${dir}/delay-${d}.jsonl`;
  const lines = existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  if (lines.length === 0) { console.log(`| ${d} | - | no trace | - | FAIL |`); rows++; bad++; continue; }
  for (const l of lines) {
    rows++;
    const dev = jump(l.deviceUs?.[0] ?? []), host = jump(l.hostUs?.[0] ?? []);
    const ok = Math.abs(dev - d) <= 10 + 0.02 * d && Math.abs(host) <= 20;
    if (!ok) bad++;
    console.log(`| ${d} | ${l.inPlace ? 'in-place' : 'out-of-place'} | ${dev.toFixed(1)} | ${host.toFixed(1)} | ${ok ? 'PASS' : 'FAIL'} |`);
  }
}
console.log(`\narrival proof: ${rows - bad} of ${rows} row-halves within tolerance (device: D +- (10 us + 2 % D); host: +- 20 us)`);
process.exit(bad === 0 && rows > 0 ? 0 : 1);
EOF
if [ -n "$GC_NODE" ]; then
  gc_check "arrival delay moves the device arrival by D, not the host's" 0 'arrival proof: 6 of 6' 20 -- \
    "$GC_NODE" "$GC_WORK/arrival-proof.mjs" "$GC_WORK"
  gc_table "Device arrival vs host enqueue, delay D before iteration 10 (256 MiB, -z 0 -I 1)" "$GC_LAST_OUT"
else
  gc_skip "arrival delay moves the device arrival by D, not the host's" "no node in the bundle or on PATH"
fi
