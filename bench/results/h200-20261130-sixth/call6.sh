# Device call 6 of the 2026-11-30 sixth part (nvidia-h200): nanoGPT (GPT-2 124M, batch 64 x
# block 1024, 200 steps) trained with SDPA, fa_ck's Triton/Gluon kernels and fa_ck fp8, with this
# part's code (staged dK/dV at d128 is not on this shape's path: d64; launch.py's direct launches are).
#   bash bench/results/h200-20261130-sixth/call6.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 420 python3 bench/nanogpt.py --attn sdpa,triton,triton-fp8 --steps 200 --batch 64 --block 1024 \
    --time-budget 330 --no-plots --out "$OUT/nanogpt" 2>&1 | grep -v Warn | tail -15
