# Device call 3 of this folder (nvidia-h200), 2026-12-03 (third session): quant_lab.py's second set (L2 eviction
# hints, 128-row items, windows), then test_gluon_fp8_forward whole (202 cases; h200-20261203-threshold/call4.sh,
# which never got a machine) at this tree's fp8 path (the one-launch quantisation at 64 rows per item, quantize_fused.py here: not kept).
#   bash bench/results/h200-20261203-fused-quant/call3.sh      (from the repo root; carry out/quantize_old.py)
set -uo pipefail
source bench/device_env.sh
cp out/quantize_old.py python/fa_ck/backends/triton/quantize_old.py
PYTHONPATH=$PYTHONPATH:$PWD/bench/results/h200-20261203-fused-quant timeout ${LIMIT_LAB:-150} \
    python3 bench/results/h200-20261203-fused-quant/quant_lab.py "$OUT" 3 2>&1 | grep -v "Warn\|warn_once" | tail -20
rm python/fa_ck/backends/triton/quantize_old.py
timeout ${LIMIT_TESTS:-330} python3 -m pytest tests/test_gluon_forward.py -m "gpu and not bigmem" \
    -k "test_gluon_fp8_forward" -v -p no:warnings -n 16 -rf 2>&1 | grep -v "Warn\|warner" > "$OUT/tests.txt"
echo "PASSED $(grep -c ' PASSED ' "$OUT/tests.txt")  FAILED $(grep -c ' FAILED ' "$OUT/tests.txt")  of 202"
tail -3 "$OUT/tests.txt"
