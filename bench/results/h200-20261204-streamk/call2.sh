# Device call 2 of this folder (nvidia-h200), 2026-12-04 (fifteenth session): STREAM_K's first run (every unit split by key blocks: 8-28 % slower).
# Its GPU test (tests/test_gluon_forward.py -k stream_k), then standing.py with STREAM_K asked on
# beside main's defaults (STREAM_K off), SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261204-streamk/call2.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 240 python3 -m pytest tests/test_gluon_forward.py -k stream_k -q -p no:warnings -x 2>&1 | tail -15 \
    | tee "$OUT/pytest.txt"
timeout 330 python3 bench/standing.py --rounds ${1:-5} --out "$OUT/standing.jsonl" \
    --variant streamk='{"fwd": {"STREAM_K": true}}' \
    --points d128-S4k-full d128-S4k-causal d128-S16k-full d128-S16k-causal d128-S8k-causal d64-S4k-full nanogpt \
    2>&1 | grep -v Warn | cut -c1-200 | tail -3
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
