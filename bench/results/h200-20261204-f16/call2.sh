# Device call 2 of this folder (nvidia-h200), 2026-12-04 (eleventh session), main with s_f16.patch applied
# (branch fp8-f16-pp, not kept): standing_f16_pp.py, ROUNDS rounds (default 2): the default fp8 forward, S_F16,
# each with PINGPONG and with 3-deep rings (num_stages 3), SDPA cuDNN and flash; d128.
#   git apply bench/results/h200-20261204-f16/s_f16.patch; bash bench/results/h200-20261204-f16/call2.sh [ROUNDS]
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-f16
(cd $D && timeout 400 python3 standing_f16_pp.py "${1:-2}" "$OUT/standing_f16_pp.jsonl" 2>&1 | grep -v Warn | cut -c1-200)
python3 $D/summarize.py "$OUT/standing_f16_pp.jsonl" | tee "$OUT/summary.md"
