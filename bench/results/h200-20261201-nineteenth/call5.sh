# Device call 5 of the nineteenth part (nvidia-h200), at 17a7d80 (main's kernels, those of the
# eighteenth part): where the d64 forward's warps wait, instruction by instruction (Nsight
# Compute SourceCounters and WarpStateStats, ncu_d64.py) at nanoGPT's shape (B64 S1024 H12 d64,
# causal, bf16), fa_ck's Gluon forward and SDPA cuDNN's fprop, one call each after warm-up.
#   bash bench/results/h200-20261201-nineteenth/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
for what in fa_ck cudnn; do
  if [ $what = fa_ck ]; then K='regex:fwd_gluon'; else K='regex:sdpa|fprop|fmha|flash'; fi
  timeout 200 ncu --profile-from-start off --clock-control none --target-processes all --kernel-name "$K" \
      --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no -f -o "$W/src_$what" \
      python3 bench/results/h200-20261201-nineteenth/ncu_d64.py $what > "$W/ncu_$what.txt" 2>&1
  echo "ncu $what rc=$?"; grep -E "profiled|==ERROR==|==PROF==" "$W/ncu_$what.txt" | head -5
  ncu -i "$W/src_$what.ncu-rep" --page source --csv --print-source sass > "$OUT/src_$what.csv" 2>&1
  ncu -i "$W/src_$what.ncu-rep" --page details --print-details all > "$OUT/details_$what.txt" 2>&1
  wc -c "$OUT/src_$what.csv"; grep -E "^\s+[a-z_]+.*(kernel|fprop|Kernel)|Duration|Compute \(SM\) Throughput|Issue Slots Busy|Warp Cycles Per Issued" "$OUT/details_$what.txt" | head -8
done
tar czf "$OUT/call5_all.tgz" -C "$OUT" w
