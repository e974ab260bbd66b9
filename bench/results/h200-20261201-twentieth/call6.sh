# Device call 6 of the twentieth part (nvidia-h200), at 38a7bad; not yet run (no device was lent
# in the twenty-first part). After call 5: the two patches apart (short_fwd.py on one/ and pw/,
# call 5's points), then fwd and fwd+bwd at causal d64 / d128 S512-4k and nanoGPT's shape
# (bench/kernels.py, whose backward shares common.scores with one_bound.patch), main against
# both/, beside SDPA cuDNN and flash.
#   (the trees as in call5.sh)
#   bash bench/results/h200-20261201-twentieth/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261201-twentieth
W=$OUT/w; mkdir -p $W
export POINTS='[[64, 32, 256, 64, true], [48, 32, 384, 64, true], [32, 32, 512, 64, true], [32, 32, 512, 64, false],
  [64, 12, 1024, 64, true], [32, 16, 512, 128, true], [32, 16, 512, 128, false]]'
for t in one pw; do
  PYTHONPATH=$PWD/$t/python timeout 110 python3 $D/short_fwd.py 2>&1 | grep -v Warn > "$OUT/$t.txt"
  grep fa_ck "$OUT/$t.txt" | tail -7 | sed "s/^/$t /"
done
rm -f "$OUT/short_fwd.json"
for t in main both; do
  P=$PWD/python; [ $t = both ] && P=$PWD/both/python
  PYTHONPATH=$P timeout 130 python3 bench/kernels.py --out "$W/$t" --dtype bf16 --hdim 64 128 --mode both \
      --causal on --seqlens 512 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 1 \
      --time-budget 115 2>&1 | grep "^bf16\|^nanogpt" | sed "s/^/$t /"
  cp $W/$t/results.md "$OUT/$t.md"
done
rm -f $W/*/*.png
tar czf "$OUT/call6_all.tgz" -C "$OUT" w
