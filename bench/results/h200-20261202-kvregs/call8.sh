# Device call 8 of this folder (nvidia-h200), 2026-12-02, eighth part: the tree with LSE_PREP on by
# default at every head dim (after call 7). (1) The backward GPU tests past d128 (LSE_PREP newly on
# there); (2) call 7's six failures (CUDA out of memory: test_gpu_large and test_gpu_unequal ran beside
# 15 other workers) again, two workers.
#   bash bench/results/h200-20261202-kvregs/call8.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_gluon_backward.py -q -p no:warnings -m gpu -n 16 -rf -k "past_d128" \
    2>&1 | grep -v "^\s*$" | grep -v "Warn\|warner" | grep -v "^\.*\s*\[" | tail -6 | tee "$OUT/tests_past_d128.txt"
timeout 200 python3 -m pytest tests/test_triton_kernels.py -q -p no:warnings -m gpu -n 2 -rf -k "gpu_large or gpu_unequal" \
    2>&1 | grep -v "^\s*$" | grep -v "Warn\|warner" | grep -v "^\.*\s*\[" | tail -6 | tee "$OUT/tests_large.txt"
