# Device call 7 of this folder (nvidia-h200), 2026-12-04 (fifteenth session): FIRST_POLY (1 in 2 or
# 4 of a tile's first block's exponentials by a polynomial on the FMA pipe, that block's softmax
# running with the tensor cores idle; the key-block loops compile as before, instruction for
# instruction) asked beside main's default (0), SDPA cuDNN and flash in the same run, 3 rounds.
#   bash bench/results/h200-20261204-streamk/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 330 python3 bench/standing.py --rounds 3 --out "$OUT/standing.jsonl" \
    --variant fp2='{"fwd": {"FIRST_POLY": 2}}' --variant fp4='{"fwd": {"FIRST_POLY": 4}}' \
    --points d128-S1k-full d128-S2k-full d128-S4k-full d128-S4k-causal d128-S16k-full d64-S4k-full nanogpt \
    2>&1 | grep -v Warn | cut -c1-200 | tail -1
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | grep -v flash | tee "$OUT/summary.md"
