# Device call 3 of the 2026-11-30 thirteenth part (nvidia-h200): call 2's forward switches again,
# 5 rounds: at d128 in bf16 (ping-pong, 3-deep rings) and in fp8 (the same, and both), each
# beside SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-thirteenth/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 120 python3 bench/kernels.py --out "$OUT/bf16" --dtype bf16 --hdim 128 --mode fwd --no-nanogpt \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 110 \
    --variant pp='{"fwd": {"PINGPONG": true}}' --variant st3='{"fwd": {"num_stages": 3}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
timeout 150 python3 bench/kernels.py --out "$OUT/fp8" --dtype bf16 --hdim 128 --mode fwd --no-nanogpt \
    --seqlens 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 5 --time-budget 140 \
    --variant fp8pp='{"fwd": {"PINGPONG": true}}' --variant fp8st3='{"fwd": {"num_stages": 3}}' \
    --variant fp8ppst3='{"fwd": {"PINGPONG": true, "num_stages": 3}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
