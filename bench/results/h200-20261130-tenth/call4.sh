# Device call 4 of the 2026-11-30 tenth part (nvidia-h200): the whole GPU test suite with the new
# backward defaults (the Gluon dK/dV kernel with dQ added in it on every sm90 call it serves, d64
# full S1024 included; FROM_ZERO on full d64 calls), then fwd+bwd at d64/d128 S1024-16k and the
# nanoGPT shape against SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-tenth/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 380 python3 -m pytest tests -m gpu -q -rf -p no:cacheprovider -n 12 -x > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 190 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 175 \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
