# Device call 10 of this folder (nvidia-h200), 2026-12-02, eighth part: NOT RUN here (refused: too little device time left); its tests ran in h200-20261203-standing call 1 (20 passed; test_fp8's forward was left out by `-m gpu` there and ran in h200-20261203-threshold call 2). Written for
# the last ~140 s of device time: the new default after call 9 (causal d65-128 calls from 4k keys: host-made descriptors, a
# persistent grid taking units from a counter): its GPU test, and the GQA schedules' test.
#   bash bench/results/h200-20261202-kvregs/call10.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 70 python3 -m pytest tests/test_gluon_backward.py -q -p no:warnings -m gpu -n 8 -rf \
    -k "counter_by_default or gqa_windows_and_schedules" 2>&1 | grep -v "Warn\|warner" | tail -6 | tee "$OUT/tests.txt"
