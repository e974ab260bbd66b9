# Device call 1 of this folder (nvidia-h200), 2026-12-04 (eleventh session): LAZY_MAX, asked for.
# (1) its GPU tests (fp8 and 16-bit, against float64 and the fp8 emulation, on rising and random
# heads) and the diagonal-first fp8 tests beside them; (2) standing_lazy.py, ROUNDS rounds (default 1):
# fp8 own / lazy 3 / lazy 4, fp8 in / lazy 4, bf16 / lazy 4, SDPA cuDNN and flash, same process.
# It ran at 804f558 (LAZY_MAX on main then; taken out after this call, lazy_max.patch holds it): to run it
# again, from the repo root at a later main, git apply bench/results/h200-20261204-lazy/lazy_max.patch, then
#   bash bench/results/h200-20261204-lazy/call1.sh [ROUNDS]      (ran with ROUNDS 1)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-lazy
timeout -s INT 240 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py -q -p no:warnings \
    -n 14 -rf -k "lazy or diagonal_first" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -15 | tee "$OUT/tests.txt"
(cd $D && timeout 300 python3 standing_lazy.py "${1:-1}" "$OUT/standing_lazy.jsonl" 2>&1 | grep -v Warn | cut -c1-300)
python3 $D/summarize.py "$OUT/standing_lazy.jsonl" | tee "$OUT/summary.md"
