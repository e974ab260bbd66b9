# Device call 5 of this folder (nvidia-h200), 2026-12-04 (tenth session), branch q-convert-noinline:
# Q_CONVERT rounded by the consumers again (as on main), _convert_q compiled as a function of its own
# (noinline), so that ptxas schedules their key-block loop as without it (sm90 SASS: 99 % the same
# order as with no rounding, against 84-92 % inlined). (1) standing_ab.py, 3 rounds; (2) Q_CONVERT bit for
# bit against q8 in every schedule, the fp8 forward's default schedule, the no-q8 memory test.
# The branch was not merged: to run it again, from the repo root at 995c14d (main then),
#   git apply bench/results/h200-20261204-descales/noinline.patch && bash bench/results/h200-20261204-descales/call5.sh
# (it ran on q-convert-noinline).
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-descales
(cd $D && timeout 150 python3 standing_ab.py 3 "$OUT/standing_ab.jsonl" 2>&1 | grep -v Warn | cut -c1-200)
timeout -s INT 200 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q -p no:warnings \
    -n 14 -rf -k "q_converted_in_the_kernel or makes_no_q8 or (test_gluon_fp8_forward and defaults) or q_rounded_in_the_gluon" 2>&1 \
    | grep -v "Warn\|warner\|_warn_once" | tail -15 | tee "$OUT/tests.txt"
