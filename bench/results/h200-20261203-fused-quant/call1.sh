# Device call 1 of this folder (nvidia-h200), 2026-12-03 (third session): the fp8 quantisation in one
# launch. test_fp8.py whole (its quantisation tests run the waits for real here: the contention test), then
# quant_ab.py (quantize_fused.py was the tree's quantize.py then; the old two launches copied in from 95bd82f as quantize_old.py, carried as out/quantize_old.py).
#   bash bench/results/h200-20261203-fused-quant/call1.sh      (from the repo root; run with carry out/quantize_old.py)
set -uo pipefail
source bench/device_env.sh
cp out/quantize_old.py python/fa_ck/backends/triton/quantize_old.py
timeout ${LIMIT_TESTS:-150} python3 -m pytest tests/test_fp8.py -q -p no:warnings -n 8 -rfs 2>&1 | grep -v "Warn\|warner" | tail -15
PYTHONPATH=$PYTHONPATH:$PWD/bench/results/h200-20261203-fused-quant timeout ${LIMIT_AB:-330} python3 bench/results/h200-20261203-fused-quant/quant_ab.py "$OUT"
