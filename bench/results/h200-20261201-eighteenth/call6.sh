# Device call 6 of the eighteenth part (second run: the first -k matched no d48 case, 1 passed) (nvidia-h200), at b8bc1a4: the review's mends; the Gluon fp8
# forward at head dim 48 (a new default: 64-wide blocks, zero-padded columns) in every schedule,
# both P paths, against float64 and the fp8 emulation; and the config checks' GPU-free tests.
#   bash bench/results/h200-20261201-eighteenth/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 170 python3 -m pytest tests/test_gluon_forward.py -k "(test_gluon_fp8_forward and shape7) or config_and" -q -p no:warnings \
    -n 12 -rf 2>&1 | grep -v "Warn\|warner" | tail -6 | tee "$OUT/tests.txt"
