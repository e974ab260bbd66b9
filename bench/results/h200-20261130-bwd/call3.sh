# Device call 3 of the 2026-11-30 backward part (nvidia-h200): host time per call, and where it goes.
#   bash bench/results/h200-20261130-bwd/call3.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 200 python3 bench/results/h200-20261130-bwd/call3_host.py > "$OUT/host.txt" 2>&1
echo "rc=$?"; grep "per call" "$OUT/host.txt"; grep -A 40 "Ordered by: internal" "$OUT/host.txt" | cut -c1-160
