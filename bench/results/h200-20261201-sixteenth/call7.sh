# Device call 7 of the sixteenth part (nvidia-h200), at b48767f, which
# lets quantisation programs past their tensor's rows return at once: the fp8 tests.
#   bash bench/results/h200-20261201-sixteenth/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -k 5 140 python3 -m pytest tests/test_fp8.py -q -p no:warnings -n 8 -rf 2>&1 | grep -v "Warn\|warner" \
    | tail -6 | tee "$OUT/fp8_tests.txt"
