# Device call 4 of this folder (nvidia-h200), 2026-12-03 (fifth session), at the commit that adds it:
# with TAIL_LPT, does the counter (DYNAMIC) now win where it was not the default (d128 causal below
# 2k keys, configs.dkdv_dynamic_wins)? And TAIL_LPT at nanoGPT's shape (d64 causal S1k, where the
# counter is the default). fwd+bwd, causal, d128 S1k (plain and GQA 4) with `dyn` (the counter asked
# for) and `dynnotail` beside the default; nanoGPT's shape with `notail`; 3 rounds, SDPA cuDNN and
# flash beside.
#   bash bench/results/h200-20261203-no-q8/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
DYN='dyn={"bwd_dkdv": {"DYNAMIC": true, "PERSISTENT": true}}'
DYNNOTAIL='dynnotail={"bwd_dkdv": {"DYNAMIC": true, "PERSISTENT": true, "TAIL_LPT": false}}'
NOTAIL='notail={"bwd_dkdv": {"TAIL_LPT": false}}'
timeout 150 python3 bench/kernels.py --hdim 128 --seqlens 1024 --dtype bf16 --causal on --mode fwdbwd --rounds 3 \
    --backends fa_ck-triton sdpa-cudnn sdpa-flash --autograd-threads off \
    --variant "$DYN" --variant "$DYNNOTAIL" --variant "$NOTAIL" --out "$W/mha" 2>&1 | grep -v Warn | tail -6
cp $W/mha/results.md "$OUT/mha.md"
timeout 120 python3 bench/kernels.py --group 4 --hdim 128 --seqlens 1024 --dtype bf16 --causal on --mode fwdbwd \
    --rounds 3 --backends fa_ck-triton sdpa-cudnn sdpa-flash --no-nanogpt --autograd-threads off \
    --variant "$DYN" --variant "$DYNNOTAIL" --out "$W/gqa" 2>&1 | grep -v Warn | tail -5
cp $W/gqa/results.md "$OUT/gqa.md"
rm -f $W/*/*.png
tar czf "$OUT/call4_all.tgz" -C "$OUT" w
