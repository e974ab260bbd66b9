# Device call 2 of this folder (nvidia-h200), 2026-12-04 (sixteenth session), main's code as call 1:
# the main job, nanoGPT 124M (GPT-2 shape: head dim 64, causal, 1024 tokens, batch 64), 200 steps
# per variant present on the machine (sdpa, triton, triton-fp8, flex, naive), for the README's
# current table: loss, step time and tokens/s beside sdpa's in the same run.
#   bash bench/results/h200-20261204-current/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 580 python3 bench/nanogpt.py --attn sdpa,triton,triton-fp8,flex,naive --steps 200 --batch 64 --block 1024 \
    --time-budget 480 --no-plots --out "$W/nanogpt" 2>&1 | grep -v Warn | tail -14
cp $W/nanogpt/results.md "$OUT/nanogpt.md" 2>/dev/null
cp $W/nanogpt/results.json "$OUT/nanogpt.json" 2>/dev/null
