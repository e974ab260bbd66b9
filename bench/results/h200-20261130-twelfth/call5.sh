# Device call 5 of the 2026-11-30 twelfth part (nvidia-h200), on branch dkdv-persistent with
# PERSISTENT on by default up to 1024 keys (configs.dkdv_persistent_wins, from call 4): the GPU
# tests it touches (call 4's six fp8 float32-out failures mended: a caller's descales never take
# RAW_MAX, so the test compares with the quantising call's RAW_MAX off), then the nanoGPT shape
# and d64 S1024 fwd+bwd against PERSISTENT off, 5 rounds, beside SDPA cuDNN and flash.
#   bash bench/results/h200-20261130-twelfth/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 100 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py tests/test_host_path.py -q -rf \
    -n 12 -p no:cacheprovider -k "fp8_inputs_float32_out or persistent or dkdv_matches or repeated or slow_path" \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 90 python3 bench/kernels.py --out "$OUT/bwd" --dtype bf16 --hdim 64 --mode fwdbwd --seqlens 1024 \
    --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 70 \
    --variant nopersist='{"bwd_dkdv": {"PERSISTENT": false}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
