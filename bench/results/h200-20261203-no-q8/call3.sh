# Device call 3 of this folder (nvidia-h200), 2026-12-03 (fifth session), at the commit that adds it:
# call 2's benchmarks again: its `notail` variant (TAIL_LPT off) was refused, FA_CK_TRITON_CONFIG did
# not list the new switch (mended, with a test that every default switch can be overridden).
# fwd+bwd under a causal mask, GQA 4 (d64 Hq32/Hkv8, d128 Hq16/Hkv4) at S2k / S4k / S8k and plain
# attention at S4k, the default (TAIL_LPT on) against `notail`, 3 rounds, SDPA cuDNN and flash beside.
#   bash bench/results/h200-20261203-no-q8/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
NOTAIL='notail={"bwd_dkdv": {"TAIL_LPT": false}}'
timeout 250 python3 bench/kernels.py --group 4 --hdim 64 128 --seqlens 2048 4096 8192 --dtype bf16 --causal on \
    --mode fwdbwd --rounds 3 --backends fa_ck-triton sdpa-cudnn sdpa-flash --no-nanogpt --autograd-threads off \
    --variant "$NOTAIL" --out "$W/gqa" 2>&1 | grep -v Warn | tail -9
cp $W/gqa/results.md "$OUT/gqa.md"
timeout 120 python3 bench/kernels.py --hdim 64 128 --seqlens 4096 --dtype bf16 --causal on \
    --mode fwdbwd --rounds 3 --backends fa_ck-triton sdpa-cudnn sdpa-flash --no-nanogpt --autograd-threads off \
    --variant "$NOTAIL" --out "$W/mha" 2>&1 | grep -v Warn | tail -5
cp $W/mha/results.md "$OUT/mha.md"
rm -f $W/*/*.png
tar czf "$OUT/call3_all.tgz" -C "$OUT" w
