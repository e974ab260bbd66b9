# Device call 3 of this folder (nvidia-h200), 2026-12-04 (tenth session), branch q-convert-producer:
# Q_CONVERT's rounding moved from the consumers into the producer's warpgroup
# (forward_gluon_loads._copy_q_converted; call 2 had the consumers' rounding cost the kernel 3-6 %).
# (1) standing_ab.py, 3 rounds: "own" is now the producer's rounding, "own, q8" the kernel on q8;
# (2) GPU tests: Q_CONVERT bit for bit against q8 (every schedule), the fp8 forward in three
# schedules, the diagonal-first and no-q8 tests.
# The branch was not merged: to run it again, from the repo root at 995c14d (main then),
#   git apply bench/results/h200-20261204-descales/producer_four_warps.patch && bash bench/results/h200-20261204-descales/call3.sh
# (it ran on q-convert-producer at d4d29b8).
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-descales
(cd $D && timeout 150 python3 standing_ab.py 3 "$OUT/standing_ab.jsonl" 2>&1 | grep -v Warn | cut -c1-200)
timeout -s INT 260 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q -p no:warnings \
    -n 14 -rf -k "q_converted_in_the_kernel or makes_no_q8 or (test_gluon_fp8_forward and (defaults or device-desc-persistent)) or fp8_forward_diagonal_first or q_rounded_in_the_gluon" 2>&1 \
    | grep -v "Warn\|warner\|_warn_once" | tail -15 | tee "$OUT/tests.txt"
