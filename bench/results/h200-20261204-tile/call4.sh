# Device call 4 of this folder (nvidia-h200), 2026-12-04 (fourteenth session), at Q16_EARLY's default
# (on past d64): the standing against cuDNN at main's defaults, Q16_EARLY asked off beside them, and
# the polynomial's share on 256-key blocks (EXP2_POLY 2, 0) never timed there before.
# bench/standing.py, ROUNDS rounds (default 5), SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261204-tile/call4.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 500 python3 bench/standing.py --rounds ${1:-5} --out "$OUT/standing.jsonl" \
    --variant q16off='{"fwd": {"Q16_EARLY": false}}' --variant poly2='{"fwd": {"EXP2_POLY": 2}}' \
    --variant poly0='{"fwd": {"EXP2_POLY": 0}}' \
    --points d128-S4k-full d128-S4k-causal d128-S16k-full d128-S16k-causal d128-S8k-causal d128-S2k-full \
    d64-S4k-full 2>&1 | grep -v Warn | cut -c1-200 | tail -3
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
