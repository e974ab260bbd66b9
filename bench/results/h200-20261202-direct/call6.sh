# Device call 6 (nvidia-h200), 2026-12-02: nanoGPT 124M with today's code (direct launches, the
# carved backward temporaries): sdpa, triton and triton-fp8 attention, 200 steps each (as the
# ninth part's call 2).
#   bash bench/results/h200-20261202-direct/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 330 python3 bench/nanogpt.py --attn sdpa,triton,triton-fp8 --steps 200 --batch 64 --block 1024 \
    --time-budget 180 --no-plots --out "$OUT/nanogpt" 2>&1 | tail -25
ls "$OUT/nanogpt"
