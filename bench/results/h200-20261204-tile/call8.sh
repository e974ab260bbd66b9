# Device call 8 of this folder (nvidia-h200), 2026-12-04 (fourteenth session), at Q16_EARLY's final rule
# (now on at d64 but long full calls): the Gluon fp8 forward's tests in the default schedule, its f16
# scores and its diagonal-first tests (d32-128, full and causal), cut at 190 s (the budget's end).
#   bash bench/results/h200-20261204-tile/call8.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 190 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 15 -rf \
    -k "(test_gluon_fp8_forward and defaults) or test_gluon_fp8_f16_scores or diagonal_first" \
    --junitxml="$OUT/tests.xml" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -15 | tee "$OUT/tests.txt"
