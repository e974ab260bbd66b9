# Device call 4 of this folder (nvidia-h200), 2026-12-04 (twelfth session), the tree of call 3:
# (1) nanoGPT (124M, head dim 64, causal, 1024 tokens) 200 steps, sdpa and triton-fp8 with the new
# default (F16_SCORES, EXP2_POLY 4; causal: 128-key blocks); (2) bench/standing.py, ROUNDS rounds
# (default 3) at 1k-2k keys, where call 3 had 256-key blocks lose 4 % at d128 S1k: default, bn128.
#   bash bench/results/h200-20261204-default/call4.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 235 python3 bench/nanogpt.py --attn sdpa,triton-fp8 --steps 200 --batch 64 --block 1024 --time-budget 205 \
    --no-plots --out "$W/nanogpt" 2>&1 | grep -v Warn | tail -8
cp $W/nanogpt/results.md "$OUT/nanogpt.md" 2>/dev/null
cp $W/nanogpt/results.json "$OUT/nanogpt.json" 2>/dev/null
timeout 150 python3 bench/standing.py --rounds ${1:-3} --out "$OUT/standing.jsonl" \
    --variant bn128='{"fwd": {"BLOCK_N": 128}}' --points d128-S1k-full d128-S2k-full d64-S1k-full d64-S2k-full 2>&1 \
    | grep -v Warn | cut -c1-200 | tail -2
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
