# Device call 3 of the 2026-11-30 twelfth part (nvidia-h200), on branch dkdv-persistent: call 2
# again after its mend (the dK/dV kernel's 1-D grid failed on replays: run_compiled took three
# dimensions; the launcher now passes (units, 1, 1) and run_compiled pads). First the host-path
# tests alone (five of call 2's forward host-path tests failed beside that error; alone here to
# tell pollution from a fault), then the dK/dV kernel's GPU tests, then fwd+bwd with PERSISTENT
# and with LSE_PREP off at d64, beside SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-twelfth/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 100 python3 -m pytest tests/test_host_path.py tests/test_launch.py -q -rf -p no:cacheprovider -vv \
    > "$OUT/pytest_host.log" 2>&1
echo "host-path tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest_host.log" | tail -8
timeout 200 python3 -m pytest tests/test_gluon_backward.py -q -rf -n 12 -p no:cacheprovider \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 270 python3 bench/kernels.py --out "$OUT/bwd" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 245 \
    --variant persist='{"bwd_dkdv": {"PERSISTENT": true}}' --variant noprep='{"bwd_dkdv": {"LSE_PREP": false}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
