# Device call 1 of this folder (nvidia-h200), 2026-12-04 (fourteenth session): can the fp8 forward's
# per-tile cost shrink? Two new switches of the Gluon forward, each alone and together:
#   Q16_EARLY: each warpgroup releases Q's 16-bit tile once it has rounded its rows to e4m3
#              (Q_CONVERT), not after its last QK^T, so the next tile's Q loads under this tile;
#   F16_FIRST: a tile's first key block takes the f16 step too (whole blocks, f16 scores), not the
#              f32 softmax with the tensor cores idle.
# bench/standing.py, ROUNDS rounds (default 3), with SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261204-tile/call1.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 500 python3 bench/standing.py --rounds ${1:-3} --out "$OUT/standing.jsonl" \
    --variant q16early='{"fwd": {"Q16_EARLY": true}}' --variant f16first='{"fwd": {"F16_FIRST": true}}' \
    --variant both='{"fwd": {"Q16_EARLY": true, "F16_FIRST": true}}' \
    --points d128-S4k-full d128-S4k-causal d128-S16k-full d128-S2k-full d64-S4k-full d128-S1k-full \
    2>&1 | grep -v Warn | cut -c1-200 | tail -3
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
