# NOT RUN (written at the end of the eleventh part, no device time left): the first device call for
# branch dkdv-lse-prep's LSE_PREP (bwd_preprocess writes lse / scale, +inf for empty rows, beside
# delta; the Gluon dK/dV kernel reads it instead of converting lse per key block: sm90 SASS -440 to
# -464 instructions per kernel, -14 to -20 %; spills as before but d128 causal 48 -> 56 bytes).
# GPU tests of it, then fwd+bwd at d64/d128 and nanoGPT against SDPA cuDNN and flash, same run.
#   bash bench/results/h200-20261130-eleventh/next_lse_prep.sh      (from the repo root, on the branch)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_gluon_backward.py tests/test_triton_kernels.py tests/test_host_path.py -q -rf \
    -n 12 -p no:cacheprovider -k "lse_prep or preprocess or dlse or repeated" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 240 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 220 \
    --variant prep='{"bwd_dkdv": {"LSE_PREP": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
