# Device call 4 of this folder (nvidia-h200), 2026-12-03 (second session), NOT RUN (no machine could be started, three tries): test_gluon_fp8_forward (202 cases,
# the fp8 emulation with its slack, schedules x shapes x causal x P in registers), which calls 2 and 3 could not
# finish within their time limits. -n 16: one worker per CPU core (the cases are compile-bound). -v into a file,
# so that a run cut by its time limit still shows which cases passed.
#   bash bench/results/h200-20261203-threshold/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout ${LIMIT:-330} python3 -m pytest tests/test_gluon_forward.py -m "gpu and not bigmem" -k "test_gluon_fp8_forward" \
    -v -p no:warnings -n 16 -rf 2>&1 | grep -v "Warn\|warner" > "$OUT/tests.txt"
echo "PASSED $(grep -c ' PASSED ' "$OUT/tests.txt")  FAILED $(grep -c ' FAILED ' "$OUT/tests.txt")  of 202"
tail -3 "$OUT/tests.txt"
