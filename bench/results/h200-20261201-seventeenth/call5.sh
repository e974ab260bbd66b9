# Device call 5 of the seventeenth part (nvidia-h200), at ba8d000: the review's mends (P_REGS decided
# in the config; new tests: P in registers at 64-key blocks and under windows against P staged and
# float64). The fp8 selection of test_fp8, test_gluon_forward and test_host_path.
#   bash bench/results/h200-20261201-seventeenth/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 400 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py \
    -k "fp8 or replays or one_tensor or registers" -q -p no:warnings -n 12 -rf 2>&1 | grep -v "Warn\|warner" \
    | tail -12 | tee "$OUT/tests.txt"
