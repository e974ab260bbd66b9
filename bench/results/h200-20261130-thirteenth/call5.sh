# Device call 5 of the 2026-11-30 thirteenth part (nvidia-h200): main's defaults after this part
# (DYNAMIC up to d64, dq_from_acc): the GPU suite (not bigmem), the nanoGPT shape's fwd+bwd per
# kernel again beside SDPA cuDNN and flash, and fwd+bwd at d64 / d128, 1k-16k, beside them.
#   bash bench/results/h200-20261130-thirteenth/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 280 python3 -m pytest tests -m "gpu and not bigmem" -q -rf -n 12 -p no:cacheprovider \
    > "$OUT/pytest.log" 2>&1
echo "GPU suite rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 60 python3 bench/results/h200-20261130-thirteenth/nanogpt_split.py 2>&1 | grep -v Warn | tee "$OUT/nanogpt_split.txt"
timeout 150 python3 bench/kernels.py --out "$OUT/fwdbwd" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 140 \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
