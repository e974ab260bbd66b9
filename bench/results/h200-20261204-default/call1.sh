# Device call 1 of this folder (nvidia-h200), 2026-12-04 (twelfth session): F16_SCORES with EXP2_POLY 4
# the fp8 forward's default, with the kernel's f32 loop for heads whose scale could carry a score past
# f16: the GPU suite's fp8 selection (test_fp8, test_gluon_forward, test_host_path; -k "fp8 or f16").
#   bash bench/results/h200-20261204-default/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 500 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q \
    -p no:warnings -n 14 -rf -k "fp8 or f16" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -40 | tee "$OUT/tests.txt"
