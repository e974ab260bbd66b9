# Device call 6 of the twentieth part (nvidia-h200), run 2026-12-01 in the twenty-second part
# after call 5 (whose GPU tests ran out of their 250 s; call 7 runs them). Fwd and fwd+bwd at
# causal d64 / d128 / d256, S512-4k and nanoGPT's shape (bench/kernels.py, whose backward shares
# common.scores with one_bound.patch), main against both/ (main + both patches), beside SDPA
# cuDNN and flash. (The patches apart, on one/ and pw/, were dropped for device time: call 5
# showed both/ ahead of main at every short forward.)
#   (the trees as in call5.sh)
#   bash bench/results/h200-20261201-twentieth/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
for t in main both; do
  P=$PWD/python; [ $t = both ] && P=$PWD/both/python
  PYTHONPATH=$P timeout 200 python3 bench/kernels.py --out "$W/$t" --dtype bf16 --hdim 64 128 256 --mode both \
      --causal on --seqlens 512 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 1 \
      --time-budget 170 2>&1 | grep "^bf16\|^nanogpt" | sed "s/^/$t /"
  cp $W/$t/results.md "$OUT/$t.md"
done
rm -f $W/*/*.png
tar czf "$OUT/call6_all.tgz" -C "$OUT" w
