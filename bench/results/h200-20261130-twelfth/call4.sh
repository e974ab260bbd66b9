# Device call 4 of the 2026-11-30 twelfth part (nvidia-h200), on branch dkdv-persistent: the
# persistent dK/dV grid with a program count coprime to the key blocks per head (call 3's 132
# programs kept each to two of nanoGPT's eight key blocks: causal fell to 0.75x cuDNN), fwd+bwd
# beside SDPA cuDNN and flash in the same run; then the GPU suite (not the bigmem tests) on the
# branch's defaults (the dK/dV kernel's one-unit body and 1-D grid, LSE_PREP at d64, fp8 RAW_MAX).
#   bash bench/results/h200-20261130-twelfth/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 170 python3 bench/kernels.py --out "$OUT/bwd" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 150 \
    --variant persist='{"bwd_dkdv": {"PERSISTENT": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
timeout 330 python3 -m pytest tests -m "gpu and not bigmem" -q -rf -n 12 -p no:cacheprovider \
    > "$OUT/pytest.log" 2>&1
echo "GPU suite rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
