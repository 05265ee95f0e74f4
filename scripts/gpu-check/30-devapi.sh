# Part 30 (issue 28 item 9, budget about 45 s): -D, collbench's own NCCL device-API all_reduce kernels on symmetric
# windows (-R 2), checked like every other path (#wrong 0 is exit 0): -D 1 and 2 at 8 B-64 MiB, odd alignments and
# dtypes, CTA counts and a CUDA graph; -D 3 and 4 (multimem) either run with #wrong 0 or are refused in one line
# naming why: exit 5 when the GPU has no multicast, 3 when NCCL refuses the device communicator (one GPU: NCCL may
# set up no NVLS there); time per op beside -D 0.
devapi_bin="$GC_BIN/all_reduce_perf"
devapi_nccl=(--backend nccl)
devapi_sweep=(-b 8 -e 64M -f 2)

# A bundle built without a variant for this NCCL refuses -D in one line: say so once instead of failing every row.
devapi_probe="$GC_WORK/devapi-probe.out"
timeout -k 5 60 "$devapi_bin" "${devapi_nccl[@]}" -D 1 -R 2 -b 8 -e 8 > "$devapi_probe" 2>&1; devapi_code=$?
if [ "$devapi_code" = 5 ] && grep -q -- '-D 1: ' "$devapi_probe"; then
  gc_check "-D 1 refused by this build, one line, exit 5" 5 '-D 1: (the device-API kernels were built against|this collbench was built without)' \
    -- "$devapi_bin" "${devapi_nccl[@]}" -D 1 -R 2 -b 8 -e 8
  gc_skip "-D 1..4 runs" "this bundle has no device-API kernels for the loaded NCCL: $(head -c 300 "$devapi_probe" | tr '\n' ' ')"
  return 0 2>/dev/null || exit 0
fi

for k in 0 1 2 3 4; do : > "$GC_WORK/devapi-d$k.out"; done
gc_check "-D 0 -R 2 (NCCL host call), 8 B-64 MiB" 0 'backend nccl' 60 -- "$devapi_bin" "${devapi_nccl[@]}" -D 0 -R 2 "${devapi_sweep[@]}"
cp "$GC_LAST_OUT" "$GC_WORK/devapi-d0.out" 2>/dev/null
for impl in 1 2; do
  gc_check "-D $impl -R 2, 8 B-64 MiB, #wrong 0" 0 'backend nccl' 60 -- "$devapi_bin" "${devapi_nccl[@]}" -D "$impl" -R 2 "${devapi_sweep[@]}"
  cp "$GC_LAST_OUT" "$GC_WORK/devapi-d$impl.out" 2>/dev/null
done
# The vector kernel's scalar head and tail (-u 1: no 16-byte alignment) and its lanes for 1-, 2- and 8-byte types.
gc_check "-D 2 -u 1 (unaligned), 8 B-1 MiB" 0 'backend nccl' 60 -- "$devapi_bin" "${devapi_nccl[@]}" -D 2 -R 2 -u 1 -b 8 -e 1M -f 4
for t in int8 half double uint64; do
  gc_check "-D 2 -d $t, 8 B-1 MiB" 0 'backend nccl' 60 -- "$devapi_bin" "${devapi_nccl[@]}" -D 2 -R 2 -d "$t" -b 8 -e 1M -f 8
done
gc_check "-D 1 -V 1 and -G 2 (graph of kernel launches)" 0 'backend nccl' 60 -- "$devapi_bin" "${devapi_nccl[@]}" -D 1 -R 2 -V 1 -G 2 -b 8 -e 1M -f 8
gc_check "-D 2 -V 128" 0 'backend nccl' 60 -- "$devapi_bin" "${devapi_nccl[@]}" -D 2 -R 2 -V 128 -b 1M -e 64M -f 4
gc_check "-D 1 with -d bfloat16 refused, exit 2" 2 'no device-API kernel for bfloat16' -- "$devapi_bin" "${devapi_nccl[@]}" -D 1 -R 2 -d bfloat16

# Multimem: ran with #wrong 0, or refused in one stderr line naming -D N (exit 5: no multicast; 3: NCCL refused).
for impl in 3 4; do
  gc_check "-D $impl -R 2: ran #wrong 0, or refused in one line (exit 5 or 3)" 0 '^(RAN|REFUSED)' 60 -- bash -c '
    "$0" --backend nccl -D "$1" -R 2 -b 8 -e 64M -f 2 > "$2.o" 2> "$2.e"; c=$?
    if [ "$c" = 0 ]; then echo RAN; cat "$2.o"; exit 0; fi
    if { [ "$c" = 5 ] || [ "$c" = 3 ]; } && [ "$(wc -l < "$2.e")" = 1 ] && grep -q -- "-D $1 (multimem" "$2.e"; then
      echo "REFUSED (exit $c): $(cat "$2.e")"; exit 0; fi
    echo "exit $c"; cat "$2.o" "$2.e"; exit 1' "$devapi_bin" "$impl" "$GC_WORK/devapi-mm$impl"
  cp "$GC_LAST_OUT" "$GC_WORK/devapi-d$impl.out" 2>/dev/null
done

# Time per op (us, out-of-place, float sum) beside -D 0; multimem columns only where it ran.
for k in 0 1 2 3 4; do
  awk -v k="$k" '/^ *[0-9]+ +[0-9]+ +float +sum/ { print $1, k, $6 }' "$GC_WORK/devapi-d$k.out"
done > "$GC_WORK/devapi-times.txt"
{
  echo "| bytes | -D 0 (ncclAllReduce) | -D 1 LSA | -D 2 LSA vectorized | -D 3 multimem | -D 4 multimem vectorized |"
  echo "|---:|---:|---:|---:|---:|---:|"
  awk '{ t[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
    END { for (i = 1; i <= n; i++) { s = order[i]; printf "| %s |", s;
            for (k = 0; k <= 4; k++) printf " %s |", ((s, k) in t) ? t[s, k] : "-"; printf "\n" } }' "$GC_WORK/devapi-times.txt"
} > "$GC_WORK/devapi-table.md"
gc_table "-D: time per op (us) beside -D 0, one GPU, all_reduce float sum, out-of-place" "$GC_WORK/devapi-table.md"
