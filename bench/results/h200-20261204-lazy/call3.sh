# Device call 3 of this folder (nvidia-h200), 2026-12-04 (eleventh session): the new sharp-softmax fp8
# test (q ~ N(0, 4^2) and N(0, 8^2): the kernel against the float64 emulation of its roundings) and
# test_fp8.py's other forward tests beside it, on the GPU.
#   bash bench/results/h200-20261204-lazy/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 300 python3 -m pytest tests/test_fp8.py -q -p no:warnings -n 14 -rf -k "sharp or test_forward" 2>&1 \
    | grep -v "Warn\|warner\|_warn_once" | tail -15 | tee "$OUT/tests.txt"
