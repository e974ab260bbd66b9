# Device call 7 of this folder (nvidia-h200), 2026-12-04 (fourteenth session), at Q16_EARLY's rule
# after call 6 (on everywhere but d64 full calls in 256-key blocks past 2048 keys): the Q16_EARLY
# tests and the Q_CONVERT bit-for-bit test (Q16_EARLY now on at d64 / d48 there too). Per-test
# results in tests.xml (JUnit).
#   bash bench/results/h200-20261204-tile/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 300 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 8 -rf \
    -k "q16 or q_converted or sharp_heads" --junitxml="$OUT/tests.xml" 2>&1 | grep -v "Warn\|warner\|_warn_once" \
    | tail -15 | tee "$OUT/tests.txt"
