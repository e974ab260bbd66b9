# Device call 2 of this folder (nvidia-h200), 2026-12-04 (thirteenth session), after call 1: the wide
# f16 step the default on 256-key blocks (F16_WIDE, decisions.fwd_f16_wide_only), the tests' emulation
# with f16 raw scores where F16_SCORES ran (emulate's s_f16), the sharp-heads test with outlier heads.
# (1) outliers.py (now also against the emulation with f16 raw scores);
# (2) the GPU suite's fp8 selection (test_fp8, test_gluon_forward, test_host_path; -k "fp8 or f16").
#   bash bench/results/h200-20261204-wide/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 bench/results/h200-20261204-wide/outliers.py "$OUT/outliers.json" 2>&1 | grep -v Warn \
    | tee "$OUT/outliers.md"
timeout -s INT 420 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q \
    -p no:warnings -n 14 -rf -k "fp8 or f16" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -40 | tee "$OUT/tests.txt"
