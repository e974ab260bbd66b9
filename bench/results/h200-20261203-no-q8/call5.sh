# Device call 5 of this folder (nvidia-h200), 2026-12-03 (fifth session), at the commit that adds it:
# call 4 had the counter with TAIL_LPT (`dyn`) +13 % over the default (round-robin programs) on GQA
# d128 causal S1k, level to -5 % without GQA, where two identical configs differed by 6 %. Again
# with 5 rounds and more points: GQA 4 and GQA 2, d128, causal S512 / S1024 / S2048 (the default
# takes the counter from 2k keys), full S1024; `dyn` and `same` (TAIL_LPT off: for the default's
# round-robin programs the identical config, a noise gauge) beside the default.
#   bash bench/results/h200-20261203-no-q8/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
DYN='dyn={"bwd_dkdv": {"DYNAMIC": true, "PERSISTENT": true}}'
SAME='same={"bwd_dkdv": {"TAIL_LPT": false}}'
for g in 4 2; do
timeout 140 python3 bench/kernels.py --group $g --hdim 128 --seqlens 512 1024 2048 --dtype bf16 --causal on --mode fwdbwd \
    --rounds 5 --backends fa_ck-triton sdpa-cudnn --no-nanogpt --autograd-threads off \
    --variant "$DYN" --variant "$SAME" --out "$W/gqa$g" 2>&1 | grep "^gqa"
cp $W/gqa$g/results.md "$OUT/gqa$g.md"
done
timeout 80 python3 bench/kernels.py --group 4 --hdim 128 --seqlens 1024 --dtype bf16 --causal off --mode fwdbwd \
    --rounds 5 --backends fa_ck-triton sdpa-cudnn --no-nanogpt --autograd-threads off \
    --variant "$DYN" --out "$W/gqafull" 2>&1 | grep "^gqa"
cp $W/gqafull/results.md "$OUT/gqafull.md"
rm -f $W/*/*.png
tar czf "$OUT/call5_all.tgz" -C "$OUT" w
