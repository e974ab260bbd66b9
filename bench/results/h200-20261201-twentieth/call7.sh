# Device call 7 of the twentieth part (nvidia-h200), run 2026-12-01 in the twenty-second part.
# Call 6 had both/ (main + both patches) ahead of main in the short forwards but behind in the
# short fwd+bwd (d64 S512 121 -> 102 TFLOP/s, d128 S1024 237 -> 206): one_bound.patch is the only
# one that reaches the backward (common.scores). Here main, pw/ (per_warpgroup_blocks.patch
# alone) and both/, fwd and fwd+bwd at the short causal points and nanoGPT's, two rounds each,
# beside SDPA cuDNN and flash.
#   (the trees as in call5.sh)
#   bash bench/results/h200-20261201-twentieth/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
for t in main pw both; do
  P=$PWD/python; [ $t != main ] && P=$PWD/$t/python
  PYTHONPATH=$P timeout 150 python3 bench/kernels.py --out "$W/$t" --dtype bf16 --hdim 64 128 256 --mode both \
      --causal on --seqlens 512 1024 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 2 \
      --time-budget 120 2>&1 | grep "^bf16\|^nanogpt" | sed "s/^/$t /"
  cp $W/$t/results.md "$OUT/$t.md"
done
rm -f $W/*/*.png
