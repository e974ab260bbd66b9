# Device call 6 of this folder (nvidia-h200), 2026-12-04 (twelfth session): 256-key blocks on causal fp8
# calls that stream the diagonal first, from 4096 keys (decisions.fwd_fp8_wide_blocks). (1) the GPU tests
# of the diagonal-first and f16-scores paths (-k "diagonal_first or f16" over test_gluon_forward, now
# with 4096-key causal shapes); (2) bench/standing.py, ROUNDS rounds (default 2), causal points: default,
# 128-key blocks, SDPA cuDNN and flash. The last of this session's device time (~280 s).
# Ran at a92a1ec (the causal 256-key rule was taken out after it):
#   git checkout a92a1ec && bash bench/results/h200-20261204-default/call6.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 110 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 14 -rf \
    -k "diagonal_first or f16" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -25 | tee "$OUT/tests.txt"
timeout 75 python3 bench/standing.py --rounds ${1:-2} --out "$OUT/standing.jsonl" \
    --variant bn128='{"fwd": {"BLOCK_N": 128}}' --points d128-S4k-causal d128-S16k-causal d64-S4k-causal 2>&1 \
    | grep -v Warn | cut -c1-200 | tail -2
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
