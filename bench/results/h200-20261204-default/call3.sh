# Device call 3 of this folder (nvidia-h200), 2026-12-04 (twelfth session), after call 2: the f32 loop
# beside the f16 one replaced by a wide f16 step (softmax_f16._f16_step's F16_WIDE), and 256-key blocks
# the default on full fp8 calls in whole 256-key blocks (decisions.fwd_fp8_wide_blocks).
# (1) the GPU suite's fp8 selection (test_fp8, test_gluon_forward, test_host_path; -k "fp8 or f16");
# (2) bench/standing.py, ROUNDS rounds (default 2): the default, 128-key blocks, the f32 scores
# (the default before this session), SDPA cuDNN and flash.
#   bash bench/results/h200-20261204-default/call3.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 420 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q \
    -p no:warnings -n 14 -rf -k "fp8 or f16" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -40 | tee "$OUT/tests.txt"
timeout 160 python3 bench/standing.py --rounds ${1:-2} --out "$OUT/standing.jsonl" \
    --variant bn128='{"fwd": {"BLOCK_N": 128}}' --variant f32='{"fwd": {"F16_SCORES": false}}' \
    --points d128-S4k-full d128-S4k-causal d128-S16k-full d128-S16k-causal d64-S4k-full d128-S1k-full 2>&1 \
    | grep -v Warn | cut -c1-200 | tail -3
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | tee "$OUT/summary.md"
