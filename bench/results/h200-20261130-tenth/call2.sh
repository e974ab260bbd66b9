# Device call 2 of the 2026-11-30 tenth part (nvidia-h200): GPU tests of the Gluon dK/dV kernel
# with OVERLAP (a query block's S^T and dP^T multiplies queued before the previous block's dV, dK
# and dQ are waited for; new), then fwd+bwd at d64 against SDPA cuDNN and flash in the same run:
# ovl = OVERLAP on the default kernels, ovl3 = with 3 buffers, ovl1 = Gluon one pass + OVERLAP
# (d64 full S1024 runs backward.py's kernels by default), gdkdv1 = Gluon one pass without it.
#   bash bench/results/h200-20261130-tenth/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 230 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "dkdv" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 300 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 --mode fwdbwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 280 \
    --variant ovl='{"bwd_dkdv": {"OVERLAP": true}}' --variant ovl3='{"bwd_dkdv": {"OVERLAP": true, "num_stages": 3}}' \
    --variant ovl1='{"bwd_dkdv": {"GLUON": true, "ONE_PASS": true, "OVERLAP": true}}' \
    --variant gdkdv1='{"bwd_dkdv": {"GLUON": true, "ONE_PASS": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
