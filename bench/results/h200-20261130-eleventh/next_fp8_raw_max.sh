# NOT RUN (written at the end of the eleventh part, no device time left): the first device call for
# branch fp8-raw-max: the Gluon fp8 forward takes RAW_MAX on fa_ck's own descales (the folded scale
# kept >= 2^-126; a caller's descales leave it off). Compile-checked for sm90 (Triton 3.6): no
# spills. GPU tests, then the fp8 forward at d128 S4k/16k with and without it against SDPA cuDNN
# and flash (bf16) in the same run; issue 7 wants 1.6x cuDNN's bf16 forward.
#   bash bench/results/h200-20261130-eleventh/next_fp8_raw_max.sh      (from the repo root, on the branch)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_gluon_forward.py tests/test_fp8.py tests/test_triton_kernels.py -q -rf -n 12 \
    -p no:cacheprovider -k "fp8 or raw_row" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 200 python3 bench/kernels.py --out "$OUT/fp8" --dtype bf16 --hdim 128 --mode fwd --seqlens 4096 16384 \
    --no-nanogpt --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 5 --time-budget 180 \
    --variant fp8scaled='{"fwd": {"RAW_MAX": false}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/fp8/*.png
