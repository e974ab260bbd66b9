# Device call 5 of this folder (nvidia-h200), 2026-12-03 (fourth session): the quantisation's GPU
# time with and without q's copy (quant_time.py), at the final tree.
#   bash bench/results/h200-20261203-late-wait/call5.sh      (from the repo root)
source bench/device_env.sh >/dev/null
timeout 120 python3 bench/results/h200-20261203-late-wait/quant_time.py "$OUT"
