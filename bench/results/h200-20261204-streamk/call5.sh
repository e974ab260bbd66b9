# Device call 5 of this folder (nvidia-h200), 2026-12-04 (fifteenth session), at main's code after
# STREAM_K's revert (the fourteenth session's kernels): the whole fp8 GPU test selection once at
# Q16_EARLY's final rule (the fourteenth session ran it before the rule was final and parts after).
#   bash bench/results/h200-20261204-streamk/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 560 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q \
    -p no:warnings -n 15 -rf -k "fp8 or f16" --junitxml="$OUT/tests_fp8.xml" 2>&1 \
    | grep -v "Warn\|warner\|_warn_once" | tail -30 | tee "$OUT/tests_fp8.txt"
