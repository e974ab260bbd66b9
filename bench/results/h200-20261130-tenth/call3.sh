# Device call 3 of the 2026-11-30 tenth part (nvidia-h200): GPU tests of the Gluon dK/dV kernel with
# FROM_ZERO (S^T and dP^T from zero, lse / delta / mask after: no ptxas-injected wait between the
# two multiplies; new, the default up to d64), then fwd+bwd at d64/d128 against SDPA cuDNN and
# flash in the same run: sv = start values (the kernel before, at d64), fz = FROM_ZERO asked for
# (d128, spills 80-112 bytes), gdkdv1 = the Gluon one-pass kernel asked for (d64 full S1024).
#   bash bench/results/h200-20261130-tenth/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 230 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "dkdv" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 300 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 280 \
    --variant sv='{"bwd_dkdv": {"FROM_ZERO": false}}' --variant fz='{"bwd_dkdv": {"FROM_ZERO": true}}' \
    --variant gdkdv1='{"bwd_dkdv": {"GLUON": true, "ONE_PASS": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
