# NOT RUN (written at the end of the tenth part, no device time left): the first device call for
# branch dkdv-own-dq's OWN_DQ (each warpgroup of the Gluon dK/dV kernel adds the dQ of its own 64
# keys, all columns, so the two never meet at the per-block barrier; over d64 in two column
# halves, the second multiplied after the block's wait). Compile-checked for sm90 (Triton 3.6 and
# 3.7.1): d64 no spills, d128 24 / 64 bytes (full / causal; the default 8 / 48), no serialised
# wgmmas. GPU tests of it, then fwd+bwd at d64/d128 against SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-tenth/next_own_dq.sh      (from the repo root, on the branch)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "dkdv and own_dq" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 200 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 180 \
    --variant owndq='{"bwd_dkdv": {"OWN_DQ": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
