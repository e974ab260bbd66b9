# Device call 1 of this folder (nvidia-h200), 2026-12-04 (eleventh session), branch fp8-f16-scores:
# S_F16, asked for (q and k quantised to 16, QK^T summed into f16, the loop's softmax on f16x2 pairs).
# (1) check_f16.py: out and lse against float64 and the default fp8 forward; (2) standing_f16.py,
# ROUNDS rounds (default 2), against the default, a caller's fp8, fa_ck bf16, SDPA cuDNN and flash.
# The branch was not merged: s_f16.patch holds it, made against main at b09d60e. To run it again, from
# the repo root at that commit or a later one it applies to: git apply bench/results/h200-20261204-f16/s_f16.patch, then
#   bash bench/results/h200-20261204-f16/call1.sh [ROUNDS]      (ran with ROUNDS 2)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-f16
timeout 150 python3 $D/check_f16.py "$OUT/check_f16.jsonl" 2>&1 | grep -v "Warn\|_warn_once" | cut -c1-400
(cd $D && timeout 330 python3 standing_f16.py "${1:-2}" "$OUT/standing_f16.jsonl" 2>&1 | grep -v Warn | cut -c1-200)
python3 $D/summarize.py "$OUT/standing_f16.jsonl" | tee "$OUT/summary.md"
