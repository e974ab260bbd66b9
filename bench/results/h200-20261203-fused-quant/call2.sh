# Device call 2 of this folder (nvidia-h200), 2026-12-03 (third session): where the one-launch quantisation's
# time goes (call 1: 124-138 us of GPU time against the two launches' 128-133 us): quant_lab.py.
#   bash bench/results/h200-20261203-fused-quant/call2.sh      (from the repo root; carry out/quantize_old.py)
set -uo pipefail
source bench/device_env.sh
cp out/quantize_old.py python/fa_ck/backends/triton/quantize_old.py
PYTHONPATH=$PYTHONPATH:$PWD/bench/results/h200-20261203-fused-quant timeout ${LIMIT:-400} \
    python3 bench/results/h200-20261203-fused-quant/quant_lab.py "$OUT" 2>&1 | grep -v "Warn\|warn_once"
