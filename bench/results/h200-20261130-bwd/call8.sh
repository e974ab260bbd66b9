# Device call 8 of the 2026-11-30 backward part (nvidia-h200), the final code of this part
# (Gluon dQ and dK/dV on by default where they won; eager path): a random sweep against the
# float64 reference (default configs, 150 s of new cases), then the record table (bf16, d64/d128,
# fwd and fwd+bwd, 3 interleaved rounds) against SDPA cuDNN and flash.
#   bash bench/results/h200-20261130-bwd/call8.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 230 python3 bench/random_sweep.py --workers 12 --cases 3000 --time-budget 150 --out "$OUT/sweep" 2>&1 | tail -6
timeout 230 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 170 \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
