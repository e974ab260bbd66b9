#!/usr/bin/env bash
# Device call 4 (kind nvidia-h200-x2, from the repo root): the randomised sweep against the
# float64 reference on both GPUs (12 workers each), then, alone on GPU 0, the d128 points whose
# ratios moved most between runs, with a longer warm-up, the previous defaults beside the new.
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
bash bench/h200.sh sweep 390 2>&1 | tail -25
timeout 100 python3 bench/kernels.py --hdim 128 --seqlens 1024 4096 --mode both --no-nanogpt \
    --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --variant prev='{"fwd": {"TMA": false}, "bwd_dkdv": {"BLOCK_M": 32, "BLOCK_N": 64}, "bwd_dq": {"num_stages": 2}}' \
    --warmup 300 --rep 200 --time-budget 60 --out "$OUT/kernels" 2>&1 | tail -14
