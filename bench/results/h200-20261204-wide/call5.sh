# Device call 5 of this folder (nvidia-h200), 2026-12-04 (thirteenth session): the wide f16 step on
# every tile of 256-key blocks (the default since call 1, decisions.fwd_f16_wide_only) against the
# guard's two steps (F16_WIDE false) where call 1 did not measure it: d64 S1k / S2k full, and again
# at d128 S2k and d64 S4k full. bench/standing.py, ROUNDS rounds (default 3).
#   bash bench/results/h200-20261204-wide/call5.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 170 python3 bench/standing.py --rounds ${1:-3} --out "$OUT/standing.jsonl" \
    --variant guard='{"fwd": {"F16_WIDE": false}}' \
    --points d64-S1k-full d64-S2k-full d128-S2k-full d64-S4k-full 2>&1 | grep -v Warn | cut -c1-200 | tail -3
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
