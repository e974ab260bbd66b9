# Device call 1 of this folder (nvidia-h200), 2026-12-04 (thirteenth session): is the wide f16 step
# (softmax_f16._f16_step's F16_WIDE, asked for on every tile by FA_CK_TRITON_CONFIG F16_WIDE) as fast as
# the guard's one-fma step, and how precise is each on heads with an outlier channel?
# (1) outliers.py: per head (outlier channel 0 / 20 / 40 / 60 in q and k), guard against wide, errors
#     against float64 and against the emulation;
# (2) bench/standing.py, ROUNDS rounds (default 3): the default (the guard), F16_WIDE on every tile,
#     PINGPONG, 3-deep rings; SDPA cuDNN and flash.
#   bash bench/results/h200-20261204-wide/call1.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 bench/results/h200-20261204-wide/outliers.py "$OUT/outliers.json" 2>&1 | grep -v Warn \
    | tee "$OUT/outliers.md"
timeout 330 python3 bench/standing.py --rounds ${1:-3} --out "$OUT/standing.jsonl" \
    --variant wide='{"fwd": {"F16_WIDE": true}}' --variant pingpong='{"fwd": {"PINGPONG": true}}' \
    --variant stages3='{"fwd": {"num_stages": 3}}' \
    --points d128-S4k-full d128-S4k-causal d128-S16k-full d128-S16k-causal d64-S4k-full d128-S2k-full \
    d64-S4k-causal 2>&1 | grep -v Warn | cut -c1-200 | tail -3
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
