# Device call 5 of this folder (nvidia-h200), 2026-12-04 (fourteenth session), at the review fixes:
# Q16_EARLY's GPU test over three schedules (host-made descriptors, device-made with three
# persistent programs, three programs) and the Q_CONVERT bit-for-bit test, which now asserts
# Q16_EARLY's default. Per-test results in tests.xml (JUnit).
#   bash bench/results/h200-20261204-tile/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 300 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 8 -rf \
    -k "q16 or q_converted" --junitxml="$OUT/tests.xml" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -15 \
    | tee "$OUT/tests.txt"
