# Device call 5 (nvidia-h200), 2026-12-02: after the review's mends (e22e6b0): the direct-launch
# GPU tests (now with device-made tensor maps and every CUresult checked), then the backward's and
# the kernels' GPU tests (the carved temporaries are in every backward), 16 at a time.
#   bash bench/results/h200-20261202-direct/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 120 python3 -m pytest tests/test_driver_launch.py tests/test_launch.py tests/test_gpu_scale.py \
    -m "gpu and not bigmem" -q -p no:warnings -n 8 -rf 2>&1 | grep -v "^\s*$" | grep -v "Warn\|warner" | tail -8 \
    | tee "$OUT/tests.txt"
timeout 420 python3 -m pytest tests/test_gluon_backward.py tests/test_triton_kernels.py tests/test_fp8.py \
    tests/test_features.py tests/test_api.py -m "gpu and not bigmem" -q -p no:warnings -n 16 -rf 2>&1 \
    | grep -v "^\s*$" | grep -v "Warn\|warner" | tail -12 | tee -a "$OUT/tests.txt"
