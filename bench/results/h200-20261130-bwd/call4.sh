# Device call 4 of the 2026-11-30 backward part (nvidia-h200): host time layer by layer.
#   bash bench/results/h200-20261130-bwd/call4.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 200 python3 bench/results/h200-20261130-bwd/call4_layers.py 2>&1 | tee "$OUT/layers.txt"
