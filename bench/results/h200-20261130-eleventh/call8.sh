# Device call 8 of the 2026-11-30 eleventh part (nvidia-h200): RAW_MAX in forward.py too (the
# kernel for AMD, and on the H200 for softcap, ALiBi, dropout, d256, float32): its GPU tests and
# the Gluon forward's scale tests, then forward.py (GLUON off) with and without it, and the Gluon
# forward without it, against SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-eleventh/call8.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 90 python3 -m pytest tests/test_triton_kernels.py tests/test_gluon_forward.py -q -rf -n 8 -p no:cacheprovider \
    -k "raw_row_max or softmax_scales or fp8_forward_negative_scale" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 125 python3 bench/kernels.py --out "$OUT/fwd" --dtype bf16 --hdim 64 128 --mode fwd --seqlens 1024 4096 \
    --no-nanogpt --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 105 \
    --variant tri='{"fwd": {"GLUON": false}}' --variant triscaled='{"fwd": {"GLUON": false, "RAW_MAX": false}}' \
    --variant scaled='{"fwd": {"RAW_MAX": false}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/fwd/*.png
