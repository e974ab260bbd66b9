# Device call 5 of the 2026-11-30 tenth part (nvidia-h200): call 4's five out-of-memory tests again,
# one at a time (12 workers each holding float64 references filled the GPU); GPU tests of the
# Gluon dK/dV kernel dispatched key block by key block (KEY_BLOCK_MAJOR, new: longest causal
# programs first); fwd+bwd at d64/d128 S1024/S4k against SDPA cuDNN and flash in the same run,
# kbm = KEY_BLOCK_MAJOR asked for.
#   bash bench/results/h200-20261130-tenth/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 -m pytest tests/test_triton_kernels.py::test_gpu_large tests/test_gpu_scale.py -m gpu -q -rf \
    -p no:cacheprovider > "$OUT/pytest_large.log" 2>&1
echo "large tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest_large.log" | tail -8
timeout 120 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "dkdv and key_block_major" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 150 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 135 \
    --variant kbm='{"bwd_dkdv": {"KEY_BLOCK_MAJOR": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
