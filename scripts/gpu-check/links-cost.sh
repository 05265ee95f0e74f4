#!/usr/bin/env bash
# A helper of gpu-check part 70 (not a part: no NN- prefix): what --links costs, from interleaved runs of the same
# nccl-tests table with and without it, and whether that cost lets -I 1 turn --links on by default (docs/links.md,
# "Cost"). Tested on real tables (a CPU backend's) by test/native/link-features.test.ts.
# Usage: links-cost.sh DIR   (DIR holds R-with.out and R-without.out per round R, each one run's table)
# Prints per size the median over rounds of each run's out-of-place time, with and without, and the cost in percent
# (median over rounds of with / without - 1, each round's pair run back to back), then the decision line:
#   decision: --links on by default with -I 1: yes|no (median cost ≤ 64 KiB: X %, limit 2 %; at the largest size: Y %,
#   limit 1 %)
# Small sizes carry one or a few proxy steps per channel, where the plugin's fixed cost per step weighs most; the
# largest size is the bandwidth the benchmark reports. Exit 0 with a decision, 2 when no round has both tables.
set -u
dir="${1:-}"
[ -d "$dir" ] || { echo "links-cost.sh: usage: links-cost.sh DIR" >&2; exit 2; }
SMALL_LIMIT_BYTES=65536 SMALL_LIMIT_PCT=2 LARGE_LIMIT_PCT=1
rows() { # FILE -> "size time" per table row (out-of-place time: the 6th column of nccl-tests' table)
  awk '!/^#/ && /^ *[0-9]+ +[0-9]+ / && $6 ~ /^[0-9.]+$/ { print $1, $6 }' "$1"
}
pairs="$(mktemp)"; trap 'rm -f "$pairs"' EXIT
rounds=0
for with in "$dir"/*-with.out; do
  [ -f "$with" ] || continue
  without="${with%-with.out}-without.out"
  [ -f "$without" ] || continue
  rounds=$((rounds + 1))
  join <(rows "$without" | sort -k1,1) <(rows "$with" | sort -k1,1) >> "$pairs" # size without with
done
[ "$rounds" -gt 0 ] && [ -s "$pairs" ] || { echo "links-cost.sh: no round with both tables in $dir" >&2; exit 2; }
sort -k1,1n "$pairs" | awk -v rounds="$rounds" -v small="$SMALL_LIMIT_BYTES" -v sl="$SMALL_LIMIT_PCT" \
  -v ll="$LARGE_LIMIT_PCT" '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function flush(   w, x, c) {
    if (size == "") return
    w = median(wo, k); x = median(wi, k); c = median(cost, k)
    printf "%10s B: without %.2f us, with %.2f us (median of %d rounds): cost %+.1f %%\n", size, w, x, k, c
    if (size + 0 <= small) smallCosts[++ns] = c
    last = c; lastSize = size
  }
  $1 != size { flush(); size = $1; k = 0 }
  { k++; wo[k] = $2; wi[k] = $3; cost[k] = ($2 > 0 ? ($3 / $2 - 1) * 100 : 0) }
  END {
    flush()
    s = ns ? median(smallCosts, ns) : 0
    on = (ns > 0 && s < sl && last < ll) ? "yes" : "no"
    printf "decision: --links on by default with -I 1: %s (median cost <= %d B: %s, limit %d %%; at %s B: %+.1f %%, limit %d %%; %d rounds)\n",
      on, small, ns ? sprintf("%+.1f %%", s) : "no size", sl, lastSize, last, ll, rounds
  }'
