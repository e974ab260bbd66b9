# Device call 6 of the 2026-11-30 tenth part (nvidia-h200): fwd+bwd at d128 causal S1024-16k (and
# d128 full S1024 for scale) against SDPA cuDNN and flash in the same run, 5 rounds, with
# hdesc = the Gluon dK/dV kernel on host-made descriptors asked for (off by default on masked d128
# calls since ninth call 1, measured before replayed plans; call 1 here had it +7 % at S1024).
#   bash bench/results/h200-20261130-tenth/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 --mode fwdbwd --no-nanogpt \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 180 \
    --variant hdesc='{"bwd_dkdv": {"HOST_DESC": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
