# Device call 1 of this folder (nvidia-h200), 2026-12-04 (sixteenth session): the fp8 forward's
# standing at main's defaults on every point of bench/standing.py, one run, for the README's
# current table (kernel and call x SDPA cuDNN's bf16, SDPA flash beside, error against float64).
#   bash bench/results/h200-20261204-current/call1.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 560 python3 bench/standing.py --rounds ${1:-3} --out "$OUT/standing.jsonl" \
    --points d128-S1k-full d128-S2k-full d128-S4k-full d128-S4k-causal d128-S8k-causal d128-S16k-full \
    d128-S16k-causal d64-S1k-full d64-S2k-full d64-S4k-full d64-S4k-causal nanogpt 2>&1 | grep -v Warn \
    | cut -c1-200 | tail -3
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
