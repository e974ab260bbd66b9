# Device call 3 of the fourteenth part (nvidia-h200): K_LATE (forward_gluon.py: K_j's buffer
# released beside V_{j-1}'s, after the PV wait, not right after QK_j: Triton 3.6/3.7 put a
# warpgroup bar.sync before every mbarrier arrive, and call 2's counters showed a quarter to a
# third of the forward's warp stalls at such barriers). Its GPU tests (one schedule), then the
# forward at d64 / d128, 1k-16k, and the nanoGPT shape: K_LATE with 2- and 3-deep rings against
# main's defaults, beside SDPA cuDNN and flash.
# Ran at commit efeb87f (K_LATE was level to -5 % here and reverted in the next commit).
#   bash bench/results/h200-20261201-fourteenth/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 -m pytest tests/test_gluon_forward.py -q -rf -n 12 -p no:cacheprovider -m gpu -k "k-late" \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 240 python3 bench/kernels.py --out "$OUT/fwd" --dtype bf16 --hdim 64 128 --mode fwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 225 \
    --variant klate='{"fwd": {"K_LATE": true}}' --variant klate3='{"fwd": {"K_LATE": true, "num_stages": 3}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
