# Device call 3 of this folder (nvidia-h200), 2026-12-04 (thirteenth session), after call 2 (whose
# test run was cut at 420 s with 2 failed, the outlier heads of the sharp-heads test against the
# emulation): the emulation's f16 scores summed 32 products at a time, and the sharp-heads test's
# heads held to it within the slack of P near an e4m3 edge (test_fp8.F16_NEAR_EDGE).
# (1) outliers.py; (2) the GPU suite's fp8 selection (-k "fp8 or f16"), 480 s.
#   bash bench/results/h200-20261204-wide/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 100 python3 bench/results/h200-20261204-wide/outliers.py "$OUT/outliers.json" 2>&1 | grep -v Warn \
    | tee "$OUT/outliers.md"
timeout -s INT 470 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q \
    -p no:warnings -n 15 -rf -k "fp8 or f16" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -40 | tee "$OUT/tests.txt"
