# Device call 6 of the twentieth part (nvidia-h200), at 1a516e5; not yet run (no device was lent
# in the twenty-first part): one_bound.patch (see call5.sh) on the backward too, which shares
# common.scores (dK/dV and dQ: masked blocks). fwd and fwd+bwd at causal d64 / d128 S512-4k and
# nanoGPT's shape, main (old) and new_tree (main + the patch) in the same call, beside SDPA
# cuDNN and flash, 2 rounds.
#   (new_tree/ as in call5.sh)
#   bash bench/results/h200-20261201-twentieth/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
i=0
for r in new old new old; do             # alternated: two timings of each, in turn
  i=$((i + 1)); P=$PWD/python; [ $r = new ] && P=$PWD/new_tree/python
  PYTHONPATH=$P timeout 135 python3 bench/kernels.py --out "$W/$r$i" --dtype bf16 --hdim 64 128 --mode both \
      --causal on --seqlens 512 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 1 \
      --time-budget 120 2>&1 | grep "^bf16\|^nanogpt" | sed "s/^/$r$i /"
  cp $W/$r$i/results.md "$OUT/$r$i.md"
done
rm -f $W/*/*.png
tar czf "$OUT/call6_all.tgz" -C "$OUT" w
