# Device call 4 of the 2026-11-30 seventh part (nvidia-h200): kernel-by-kernel fwd+bwd time of
# the defaults, the one-pass and the 64-query register dK/dV variants and SDPA cuDNN
# (call4_profile.py); then the d128 variants timed again, 5 interleaved rounds (kernels.py).
#   bash bench/results/h200-20261130-seventh/call4.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
date -u | tee "$OUT/env.txt"
timeout 150 python3 bench/results/h200-20261130-seventh/call4_profile.py 2>&1 | grep -v Warn | tee "$OUT/profile.txt"
timeout 250 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 --mode fwdbwd --no-nanogpt \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 220 \
    --variant rs64='{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false}}' \
    --variant onepass='{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": true, "ONE_PASS": true}}' \
    --variant onepassrs='{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, "ONE_PASS": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
