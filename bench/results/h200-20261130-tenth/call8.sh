# Device call 8 of the 2026-11-30 tenth part (nvidia-h200): DP_FROM_ZERO (new: dP^T alone starts
# from zero, S^T keeps its start values and mask; ptxas's wait between the two multiplies gone at
# d64 and d128 with no more spills than before): GPU tests of it, then fwd+bwd at d64/d128 S1024/S4k
# against SDPA cuDNN and flash in the same run, dpz = DP_FROM_ZERO asked for (FROM_ZERO off).
#   bash bench/results/h200-20261130-tenth/call8.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 80 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "dkdv and dp_from_zero" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -6
timeout 130 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode fwdbwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 115 \
    --variant dpz='{"bwd_dkdv": {"FROM_ZERO": false, "DP_FROM_ZERO": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
