# Device call 2 of the 2026-11-30 twelfth part (nvidia-h200), on branch dkdv-persistent (main with
# LSE_PREP on at d64 and fp8 RAW_MAX, both from call 1): the Gluon dK/dV kernel's PERSISTENT
# (asked for: one program per SM taking 128-key units in turn, the next unit's K and V loaded
# under this one) and LSE_PREP off at d64 again (call 1's default-making run repeated). GPU tests
# of the dK/dV kernel first; every timing beside SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-twelfth/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 220 python3 -m pytest tests/test_gluon_backward.py tests/test_host_path.py -q -rf -n 12 -p no:cacheprovider \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 300 python3 bench/kernels.py --out "$OUT/bwd" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 270 \
    --variant persist='{"bwd_dkdv": {"PERSISTENT": true}}' --variant noprep='{"bwd_dkdv": {"LSE_PREP": false}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
