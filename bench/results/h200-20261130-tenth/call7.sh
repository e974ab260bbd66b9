# Device call 7 of the 2026-11-30 tenth part (nvidia-h200): after host-made descriptors became the
# default for masked d128 dK/dV below 4k keys, GPU tests of the host path and of the Gluon dK/dV
# kernel on host descriptors; then fwd+bwd at d128/d64 S1024 (and the nanoGPT shape) with today's
# defaults against SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-tenth/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 100 python3 -m pytest tests/test_launch.py tests/test_host_path.py -m "gpu or not gpu" -q -rf -p no:cacheprovider \
    > "$OUT/pytest_host.log" 2>&1
echo "host tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest_host.log" | tail -6
timeout 120 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "dkdv and host_desc" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -6
timeout 120 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 100 \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
