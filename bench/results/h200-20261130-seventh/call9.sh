# Device call 9 of the 2026-11-30 seventh part (nvidia-h200): d64 causal S1024 (B16xH32 and the
# nanoGPT shape B64xH12), fwd+bwd, 5 interleaved rounds: the defaults (Triton dK/dV + dQ there)
# against the Gluon dK/dV kernel with dQ in it (onepass), to decide d64's short masked default.
#   bash bench/results/h200-20261130-seventh/call9.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
date -u | tee "$OUT/env.txt"
timeout 100 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 --mode fwdbwd --causal on \
    --seqlens 1024 --backends fa_ck-triton sdpa-cudnn --rounds 5 --time-budget 80 \
    --variant onepass='{"bwd_dkdv": {"GLUON": true, "ONE_PASS": true}}' 2>&1 | grep -v Warn | grep "^\["
rm -f "$OUT"/kernels/*.png
