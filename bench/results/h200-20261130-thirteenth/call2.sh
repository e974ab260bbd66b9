# Device call 2 of the 2026-11-30 thirteenth part (nvidia-h200): DYNAMIC on by default up to d64
# (configs.dkdv_dynamic_wins, from call 1): the GPU suite (not bigmem), d64 fwd+bwd against one
# program per unit, then three forward switches at d64 (64-key blocks, 3-deep rings, ping-pong)
# and at d128 in fp8, each beside SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-thirteenth/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 280 python3 -m pytest tests -m "gpu and not bigmem" -q -rf -n 12 -p no:cacheprovider \
    > "$OUT/pytest.log" 2>&1
echo "GPU suite rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 90 python3 bench/kernels.py --out "$OUT/bwd" --dtype bf16 --hdim 64 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 80 \
    --variant single='{"bwd_dkdv": {"PERSISTENT": false}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
timeout 70 python3 bench/kernels.py --out "$OUT/fwd" --dtype bf16 --hdim 64 --mode fwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 60 \
    --variant bn64='{"fwd": {"BLOCK_N": 64}}' --variant st3='{"fwd": {"num_stages": 3}}' \
    --variant pp='{"fwd": {"PINGPONG": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
timeout 80 python3 bench/kernels.py --out "$OUT/fp8" --dtype bf16 --hdim 128 --mode fwd --no-nanogpt \
    --seqlens 4096 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 3 --time-budget 70 \
    --variant fp8bn64='{"fwd": {"BLOCK_N": 64}}' --variant fp8st3='{"fwd": {"num_stages": 3}}' \
    --variant fp8pp='{"fwd": {"PINGPONG": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
