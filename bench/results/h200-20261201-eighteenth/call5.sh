# Device call 5 of the eighteenth part (nvidia-h200), at 52bfbe4: nanoGPT (124M, head dim 64) trained
# 200 steps with SDPA and with triton-fp8, whose forward now runs the Gluon fp8 kernel at d64 (call
# 2; forward.py's fp8 kernel before, the seventeenth part's call 4: val +0.024 against sdpa).
#   bash bench/results/h200-20261201-eighteenth/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 235 python3 bench/nanogpt.py --attn sdpa,triton-fp8 --steps 200 --batch 64 --block 1024 --time-budget 215 \
    --no-plots --out "$W/nanogpt" 2>&1 | grep -v Warn | tail -8
cp $W/nanogpt/results.md "$OUT/nanogpt.md" 2>/dev/null
