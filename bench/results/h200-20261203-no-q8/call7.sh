# Device call 7 of this folder (nvidia-h200), 2026-12-03 (fifth session), at the commit that adds it:
# the review's mends (the tail test at 32 SMs: every hand-out remapped; TAIL_LPT only where the
# Gluon dK/dV kernel can run): the tail's and the counter's GPU tests, the fp8 host-path tests.
#   bash bench/results/h200-20261203-no-q8/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_gluon_backward.py tests/test_host_path.py -m "not bigmem" \
    -k "heaviest or counter_by_default or lpt or (test_host_path.py and fp8)" \
    -q -p no:warnings -n 12 -rfs 2>&1 | grep -v "Warn\|warner" | tail -12 | tee "$OUT/tests.txt"
