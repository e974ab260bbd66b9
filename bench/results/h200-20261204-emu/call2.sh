# Device call 2 of this folder (nvidia-h200), 2026-12-04 (eleventh session), branch fp8-exp-emu as landed:
# F16_SCORES and EXP2_POLY (asked for, softmax_f16.py). (1) their GPU tests and the default fp8 paths' tests
# beside them (diagonal first, Q_CONVERT bit for bit, sharp softmaxes); (2) standing_poly.py, ROUNDS rounds.
#   bash bench/results/h200-20261204-emu/call2.sh [ROUNDS]      (from the repo root; ran at 1007470 with ROUNDS 2)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-emu
timeout -s INT 220 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py -q -p no:warnings -n 14 -rf \
    -k "f16_scores or diagonal_first or q_converted_in_the_kernel or sharp or one_launch" 2>&1 \
    | grep -v "Warn\|warner\|_warn_once" | tail -25 | tee "$OUT/tests.txt"
(cd $D && timeout 240 python3 standing_poly.py "${1:-2}" "$OUT/standing_poly.jsonl" 2>&1 | grep -v Warn | cut -c1-200)
python3 $D/summarize.py "$OUT/standing_poly.jsonl" | tee "$OUT/summary.md"
