# Device call 1 of the 2026-11-30 tenth part (nvidia-h200): GPU tests of launch.py and the replay
# plans (mended after the ninth part's last call, never GPU-run); the ninth part's replay check
# (call5_replay.py); per-kernel fwd+bwd times against SDPA cuDNN and flash (call1_prof.py);
# fwd+bwd at d64/d128 S1024/S4k with the Gluon dK/dV kernel asked for at d64 (gdkdv: + backward.py's
# dQ; gdkdv1: dQ added in it) and host-made descriptors asked for at d128 causal (hdesc).
#   bash bench/results/h200-20261130-tenth/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 90 python3 -m pytest tests/test_launch.py tests/test_host_path.py -m "gpu or not gpu" -q -rf -p no:cacheprovider \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 120 python3 bench/results/h200-20261130-ninth/call5_replay.py 2>&1 | grep -v Warn | tee "$OUT/replay.txt"
timeout 90 python3 bench/results/h200-20261130-tenth/call1_prof.py 2>&1 | grep -v Warn | tee "$OUT/prof.txt"
timeout 250 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 230 \
    --variant gdkdv='{"bwd_dkdv": {"GLUON": true}}' --variant gdkdv1='{"bwd_dkdv": {"GLUON": true, "ONE_PASS": true}}' \
    --variant hdesc='{"bwd_dkdv": {"HOST_DESC": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
