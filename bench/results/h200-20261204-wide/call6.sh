# Device call 6 of this folder (nvidia-h200), 2026-12-04 (thirteenth session), at the review fixes:
# the GPU tests the last changes touch that call 4 did not run on this tree: the f16 tests of
# test_gluon_forward, and test_gluon_fp8_forward's shapes in whole 256-key blocks at d64 / d32
# (the guard's kernel again since call 5, now against the emulation with f16 sums).
#   bash bench/results/h200-20261204-wide/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 140 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 15 -rf \
    -k "f16 or (test_gluon_fp8_forward and (shape1 or shape5))" 2>&1 | grep -v "Warn\|warner\|_warn_once" \
    | tail -30 | tee "$OUT/tests.txt"
