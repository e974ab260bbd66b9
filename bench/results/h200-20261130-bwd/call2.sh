# Device call 2 of the 2026-11-30 backward part (nvidia-h200): fwd+bwd kernel by kernel.
#   bash bench/results/h200-20261130-bwd/call2.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 240 python3 bench/results/h200-20261130-bwd/call2_profile.py 2>&1 | grep -v Warning | tee "$OUT/profile.txt"
# backward tiles at S1024 (where fa_ck trails most) and the Gluon dK/dV with 3-deep rings
timeout 200 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode fwdbwd \
    --seqlens 1024 16384 --backends fa_ck-triton sdpa-cudnn --rounds 3 --time-budget 150 \
    --variant gbwd='{"bwd_dkdv": {"GLUON": true}}' --variant gbwd3='{"bwd_dkdv": {"GLUON": true, "num_stages": 3}}' \
    --variant dq64='{"bwd_dq": {"BLOCK_M": 64, "num_warps": 4}}' --variant dkdv64='{"bwd_dkdv": {"BLOCK_N": 64}}' \
    2>&1 | grep -v Warning | grep "^\[" 
rm -f "$OUT"/kernels/*.png
