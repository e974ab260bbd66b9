# Device call 3 of this folder (nvidia-h200), 2026-12-04 (eleventh session), at e6734f2: nanoGPT
# (124M, head dim 64, causal, 1024 tokens) trained 200 steps with SDPA and with triton-fp8 whose forward
# takes F16_SCORES with EXP2_POLY 4 (asked for through FA_CK_TRITON_CONFIG, which only fa_ck reads).
#   bash bench/results/h200-20261204-emu/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
FA_CK_TRITON_CONFIG='{"fwd": {"F16_SCORES": true, "EXP2_POLY": 4}}' timeout 235 python3 bench/nanogpt.py \
    --attn sdpa,triton-fp8 --steps 200 --batch 64 --block 1024 --time-budget 205 --no-plots --out "$W/nanogpt" 2>&1 \
    | grep -v Warn | tail -8
cp $W/nanogpt/results.md "$OUT/nanogpt.md" 2>/dev/null
