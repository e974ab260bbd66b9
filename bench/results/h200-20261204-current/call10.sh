# Device call 10 of this folder (nvidia-h200), 2026-12-04 (sixteenth session): the misaligned address
# of test_fwd_bwd_fp32[64-64-40-4-True] (found in call 8, `pytest tests -m "not gpu and not bigmem"`
# on the H200), varied one thing at a time (misaligned.py).
#   bash bench/results/h200-20261204-current/call10.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 400 python3 bench/results/h200-20261204-current/misaligned.py "$OUT/misaligned.md" 2>&1 | tail -20
