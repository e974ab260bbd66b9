# Device call 7 (nvidia-h200), 2026-12-02, on the session's last ~250 s of device time: issue 6's
# short fwd+bwd points with autograd multithreading off (bench/kernels.py --autograd-threads off,
# 5835897), SDPA cuDNN and flash in the same run under the same setting.
#   bash bench/results/h200-20261202-direct/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 125 python3 bench/kernels.py --out "$OUT/k" --dtype bf16 --hdim 64 128 256 --mode fwdbwd --causal both \
    --seqlens 512 --no-nanogpt --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 85 \
    --autograd-threads off 2>&1 | grep "^bf16\|MISSED\|met" | tail -12
rm -f "$OUT"/k/*.png
