# Device call 1 of the 2026-11-30 thirteenth part (nvidia-h200): the dynamic dK/dV grid (DYNAMIC:
# units past the first SM-count from an atomic counter) -- its GPU tests and the twelfth part's
# untested mends first (fp8 float32 out, persistent asks on one SM), then fwd+bwd beside the
# static persistent grid and SDPA cuDNN / flash, d64 / d128 at 1k-16k; then where the fp8
# forward's time goes (torch.profiler, per kernel).
#   bash bench/results/h200-20261130-thirteenth/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py tests/test_host_path.py -q -rf \
    -n 12 -p no:cacheprovider -k "fp8_inputs_float32_out or persistent or dkdv_matches or dkdv_windows or repeated or slow_path" \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 260 python3 bench/kernels.py --out "$OUT/bwd" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 240 \
    --variant static='{"bwd_dkdv": {"PERSISTENT": true}}' \
    --variant dynamic='{"bwd_dkdv": {"PERSISTENT": true, "DYNAMIC": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
timeout 90 python3 bench/results/h200-20261130-thirteenth/fp8_split.py 2>&1 | tee "$OUT/fp8_split.txt" | grep -v Warn
