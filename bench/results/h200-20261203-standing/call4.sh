# Device call 4 of this folder (nvidia-h200), 2026-12-03: call 3's sweep in fp16 (d64 / d128 / d256, S512-16k,
# causal or not, fwd and fwd+bwd, nanoGPT's shape), fa_ck's defaults beside SDPA cuDNN and flash, 2 rounds.
#   bash bench/results/h200-20261203-standing/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 300 python3 bench/kernels.py --out "$OUT/sweep" --dtype fp16 --hdim 128 64 256 --mode both --causal both \
    --seqlens 512 1024 2048 4096 8192 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 2 \
    --time-budget 280 2>&1 | grep -v Warn | grep "MISS\|met\|rows"
rm -f "$OUT"/*/*.png
