# Device call 4 of this folder (nvidia-h200), 2026-12-03 (fourth session): Q_CONVERT as the default,
# the final tree: every fp8 test of test_gluon_forward.py (all schedules, both P paths, windows, fp32
# out, fp8 inputs, raw max, the bit-for-bit test), test_host_path.py and test_launch.py whole.
#   bash bench/results/h200-20261203-late-wait/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 420 python3 -m pytest tests/test_gluon_forward.py tests/test_host_path.py tests/test_launch.py \
    -k "fp8 or bit_for_bit or test_host_path.py or test_launch.py" -m "not bigmem" \
    -q -p no:warnings -n 14 -rf 2>&1 | grep -v "Warn\|warner" | tail -12 | tee "$OUT/tests.txt"
