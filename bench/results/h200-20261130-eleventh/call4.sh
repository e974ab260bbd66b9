# Device call 4 of the 2026-11-30 eleventh part (nvidia-h200): the record on the new defaults
# (Gluon forward everywhere on sm90, raw row max): fwd and fwd+bwd at d64/d128 S1024-16k and the
# nanoGPT shape against SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-eleventh/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 360 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 128 --mode both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 320 \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
