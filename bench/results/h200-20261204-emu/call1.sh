# Device call 1 of this folder (nvidia-h200), 2026-12-04 (eleventh session), branch fp8-exp-emu (main with
# ../h200-20261204-f16/s_f16.patch and EXP_EMU): standing_emu.py, ROUNDS rounds (default 2): the default fp8
# forward, S_F16, S_F16 with 1/2 or 1/4 of its exponentials as a quadratic on the FMA pipe (EXP_EMU 2 / 4),
# and the latter with 3-deep rings; SDPA cuDNN and flash; rel. error against float64 in round 0.
#   bash bench/results/h200-20261204-emu/call1.sh [ROUNDS]      (from the repo root, on the branch)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-emu
(cd $D && timeout 420 python3 standing_emu.py "${1:-2}" "$OUT/standing_emu.jsonl" 2>&1 | grep -v Warn | cut -c1-200)
python3 $D/summarize.py "$OUT/standing_emu.jsonl" | tee "$OUT/summary.md"
