# Device call 7 of the 2026-11-30 eleventh part (nvidia-h200): GPU tests of the Gluon forward, the
# host path and the launcher with TMA stores of out by default at d64 too, then the forward at d64
# against SDPA cuDNN and flash. (Calls 5 and 6 were one-line commands on the warm machine:
#   python3 bench/kernels.py --out $OUT/fwd --dtype bf16 --hdim 64 --mode fwd --seqlens 1024 4096 \
#     --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 170 --variant st3=... \
#     --variant bn64=... --variant bn64st3=... --variant store='{"fwd": {"TMA_STORE": true}}'
#   and the same with --seqlens 1024 4096 16384 --rounds 5 and only the store variant.)
#   bash bench/results/h200-20261130-eleventh/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 230 python3 -m pytest tests/test_gluon_forward.py tests/test_host_path.py tests/test_launch.py -m gpu -q -rf \
    -n 12 -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 100 python3 bench/kernels.py --out "$OUT/fwd" --dtype bf16 --hdim 64 --mode fwd --seqlens 1024 4096 \
    --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 80 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/fwd/*.png
