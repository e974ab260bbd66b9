# Device call 9 of the fifteenth part (nvidia-h200), at the commit that lets GQA calls take the Gluon
# dK/dV kernel (a unit steps through its kv head's q heads; host-made descriptors): its GPU tests,
# then GQA fwd+bwd timed against backward.py's dK/dV kernel (the path GQA took before) beside SDPA
# cuDNN (k, v expanded) and flash (enable_gqa) with gqa_time.py, then the rest of the GPU suite.
#   bash bench/results/h200-20261201-fifteenth/call9.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 140 python3 -m pytest tests/test_gluon_backward.py -m gpu -k "gqa" -q -p no:warnings -rf -n 12 2>&1 \
    | grep -v "Warn\|warner" | tail -8 | tee "$OUT/gqa_tests.txt"
timeout 150 python3 bench/results/h200-20261201-fifteenth/gqa_time.py 2>&1 | grep -v Warn | tee "$OUT/gqa_time.md"
timeout 260 python3 -m pytest tests -m "gpu and not bigmem" -k "not gqa" -q -p no:warnings -n 12 -rf 2>&1 \
    | grep -v "Warn\|warner" | tail -25 | tee "$OUT/gpu_suite.txt"
