# Device call 6 of this folder (nvidia-h200), 2026-12-04 (fourteenth session): Q16_EARLY at d64 (off
# by default: calls 1-2 had S1k full +3.4 %, S4k full -2 %) across lengths, causal, and nanoGPT's
# training shape (64 x 12 x 1024 x 64 causal). bench/standing.py, ROUNDS rounds (default 5), SDPA
# cuDNN and flash in the same run.
#   bash bench/results/h200-20261204-tile/call6.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 400 python3 bench/standing.py --rounds ${1:-5} --out "$OUT/standing.jsonl" \
    --variant q16early='{"fwd": {"Q16_EARLY": true}}' \
    --points d64-S1k-full d64-S2k-full d64-S4k-full d64-S4k-causal nanogpt 2>&1 | grep -v Warn | cut -c1-200 | tail -3
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
