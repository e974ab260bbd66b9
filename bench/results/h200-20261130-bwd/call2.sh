# Device call 2 of the 2026-11-30 backward part (nvidia-h200): fwd+bwd kernel by kernel.
#   bash bench/results/h200-20261130-bwd/call2.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 240 python3 bench/results/h200-20261130-bwd/call2_profile.py 2>&1 | grep -v Warning | tee "$OUT/profile.txt"
