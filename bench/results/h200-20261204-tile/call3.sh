# Device call 3 of this folder (nvidia-h200), 2026-12-04 (fourteenth session), at Q16_EARLY's default
# (on past d64): (1) the new GPU tests (Q16_EARLY bit for bit, -k q16) and the sharp-heads test with
# the outlier bound at 1.05x; (2) the GPU suite's fp8 selection (-k "fp8 or f16") at this tree,
# cut at 440 s. Per-test results in tests_*.xml (JUnit).
#   bash bench/results/h200-20261204-tile/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 100 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 8 -rf \
    -k "q16 or sharp_heads" --junitxml="$OUT/tests_new.xml" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -15 \
    | tee "$OUT/tests_new.txt"
timeout -s INT 440 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q \
    -p no:warnings -n 15 -rf -k "(fp8 or f16) and not sharp_heads" --junitxml="$OUT/tests_fp8.xml" 2>&1 \
    | grep -v "Warn\|warner\|_warn_once" | tail -30 | tee "$OUT/tests_fp8.txt"
