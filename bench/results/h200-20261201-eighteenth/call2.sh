# Device call 2 of the eighteenth part (nvidia-h200), at b37c230: where the fp8 forward's warps wait,
# instruction by instruction (Nsight Compute SourceCounters: warp stall samples per SASS
# instruction, ncu_src.py) for the fp8 Gluon kernel and fa_ck's bf16 Gluon forward (d128 B1 S16k
# H16 full); then the d64 fp8 forward: the Gluon kernel asked for (fp8gl, P in registers) against
# forward.py's fp8 kernel (d64's default), beside SDPA cuDNN and flash, S1k-16k, 3 rounds.
#   bash bench/results/h200-20261201-eighteenth/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
for what in fp8 bf16; do
  timeout 150 ncu --profile-from-start off --clock-control none --target-processes all --kernel-name regex:"fwd_gluon" \
      --section SourceCounters --section WarpStateStats --import-source no -f -o "$W/src_$what" \
      python3 bench/results/h200-20261201-eighteenth/ncu_src.py $what > "$W/ncu_$what.txt" 2>&1
  echo "ncu $what rc=$?"; grep -E "profiled|==ERROR==" "$W/ncu_$what.txt" | head -3
  ncu -i "$W/src_$what.ncu-rep" --page source --csv --print-source sass > "$OUT/src_$what.csv" 2>&1
  ncu -i "$W/src_$what.ncu-rep" --page details --print-details all > "$W/details_$what.txt" 2>&1
  wc -c "$OUT/src_$what.csv"
done
timeout 200 python3 bench/kernels.py --out "$W/d64" --dtype bf16 --hdim 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8gl='{"fwd": {"GLUON": true}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | grep "^bf16"
cp $W/d64/results.md "$OUT/d64.md"
rm -f $W/*/*.png
tar czf "$OUT/call2_all.tgz" -C "$OUT" w
