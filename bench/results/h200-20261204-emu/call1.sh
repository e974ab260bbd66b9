# Device call 1 of this folder (nvidia-h200), 2026-12-04 (eleventh session), branch fp8-exp-emu (main with
# ../h200-20261204-f16/s_f16.patch and EXP_EMU): standing_emu.py, ROUNDS rounds (default 2): the default fp8
# forward, S_F16, S_F16 with 1/2 or 1/4 of its exponentials as a quadratic on the FMA pipe (EXP_EMU 2 / 4),
# and the latter with 3-deep rings; SDPA cuDNN and flash; rel. error against float64 in round 0.
# It ran at 5261a17 (the switches then named S_F16 and EXP_EMU, later F16_SCORES and EXP2_POLY: call2.sh
# and standing_poly.py time the same variants under the new names). To run it: git checkout 5261a17, then
#   bash bench/results/h200-20261204-emu/call1.sh [ROUNDS]      (from the repo root; ran with ROUNDS 2)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-emu
(cd $D && timeout 420 python3 standing_emu.py "${1:-2}" "$OUT/standing_emu.jsonl" 2>&1 | grep -v Warn | cut -c1-200)
python3 $D/summarize.py "$OUT/standing_emu.jsonl" | tee "$OUT/summary.md"
