# Device call 2 of this folder (nvidia-h200), 2026-12-03 (eighth session): where each warp of the
# forward's loop stalls, per SASS instruction (Nsight Compute WarpStateStats + SourceCounters, PC
# sampling), d128 S16k B1 H16 full, the fp8 forward's Gluon kernel and the bf16 one, one call each
# after warm-up (../h200-20261203-tree/ncu_fp8.py). Call 1 (LATE_RESCALE) and the tree calls said the
# loop is one serial chain per warpgroup with no pipe full; this asks which instructions wait, and on what.
#   bash bench/results/h200-20261203-rescale/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
ncu --version | tail -1 | tee -a "$OUT/env.txt"
for what in fp8 bf16; do
  timeout 200 ncu --profile-from-start off --clock-control none --kernel-name regex:fwd_gluon \
      --section WarpStateStats --section SourceCounters --import-source no -f -o "$W/stall_$what" \
      python3 bench/results/h200-20261203-tree/ncu_fp8.py $what > "$W/ncu_$what.txt" 2>&1
  echo "ncu $what rc=$?"; grep -E "profiled|==ERROR==" "$W/ncu_$what.txt" | head -3
  ncu -i "$W/stall_$what.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_$what.csv" 2> "$W/src_err_$what.txt"
  echo "source page $what rc=$? lines $(wc -l < "$OUT/sass_$what.csv")"; head -c 600 "$W/src_err_$what.txt"
  ncu -i "$W/stall_$what.ncu-rep" --page details --print-details all > "$OUT/details_$what.txt" 2>&1
  grep -iE "stall|warp cycles per|issued" "$OUT/details_$what.txt" | head -30
done
