# Device call 2 (nvidia-h200), 2026-12-02, right after call 1 (whose test run stopped at its timeout after
# 50 passed: the defaults and per-tile schedules): the wide Gluon forwards' GPU tests in the schedule with
# TMA stores and 3 persistent programs; then bench/kernels.py at d256 S512 / S1024 (fwd and fwd+bwd,
# causal and full), SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261202-d256/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu \
    -k "matches_reference and tma-store and (shape8 or shape9 or shape10 or shape11 or shape12)" 2>&1 | tail -2 \
    | tee "$OUT/tests.txt"
timeout 150 python3 bench/kernels.py --out "$OUT/k" --dtype bf16 --hdim 256 --mode both --causal both \
    --seqlens 512 1024 --no-nanogpt --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 110 \
    2>&1 | grep "^bf16\|MISSED\|met" | tail -12
rm -f "$OUT"/k/*.png
