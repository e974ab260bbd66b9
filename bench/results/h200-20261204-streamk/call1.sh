# Device call 1 of this folder (nvidia-h200), 2026-12-04 (fifteenth session): how much the persistent
# grid's last round costs. d128 S4k as standing's (4 x 16 heads: 1024 work units over 132 programs,
# 7.76 each, so the last round has 100 busy and 32 idle) beside 3 x 22 heads (1056 units, 8 each:
# every round full); TFLOP/s of ours and of cuDNN's bf16 kernel at both, same run, main's defaults.
#   bash bench/results/h200-20261204-streamk/call1.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 400 python3 bench/standing.py --rounds ${1:-5} --out "$OUT/standing.jsonl" \
    --points d128-S4k-full d128-S4k-full-h22 d128-S4k-causal d128-S4k-causal-h22 2>&1 | grep -v Warn \
    | cut -c1-200 | tail -3
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
