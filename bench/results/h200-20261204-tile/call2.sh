# Device call 2 of this folder (nvidia-h200), 2026-12-04 (fourteenth session): Q16_EARLY again (call 1:
# +1-3.5 % at d128, -1.8 % at d64 S4k, within a round's noise?) and SCALES_SMEM: the producer warp
# loads each tile's q amax and k, v descales and stores them in shared memory before Q's TMA (the
# consumers read them once Q has landed, not by three loads at the tile's start); each alone and
# together. bench/standing.py, ROUNDS rounds (default 5), SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261204-tile/call2.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 500 python3 bench/standing.py --rounds ${1:-5} --out "$OUT/standing.jsonl" \
    --variant q16early='{"fwd": {"Q16_EARLY": true}}' --variant scales='{"fwd": {"SCALES_SMEM": true}}' \
    --variant both='{"fwd": {"Q16_EARLY": true, "SCALES_SMEM": true}}' \
    --points d128-S4k-full d128-S4k-causal d128-S16k-full d128-S2k-full d64-S4k-full d128-S1k-full d64-S1k-full \
    d128-S8k-causal 2>&1 | grep -v Warn | cut -c1-200 | tail -3
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
