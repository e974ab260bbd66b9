# Device call 2 of the fifteenth part (nvidia-h200), main's code at the commit named in the README
# (no default changed since call 1): the wide backward's choices where call 1 left them open. d256
# S1024 / S2048 fwd+bwd with dQ's rings 2- or 3-deep (call 1: 3-deep +4 to +13 % except S1024 causal
# -9.5 %) and the dK/dV grid persistent or not (the default up to 1024 keys); d160 / d192 at S4k
# (bf16 and fp16) with dQ 2- or 3-deep; beside SDPA cuDNN and flash. Then the whole GPU suite
# (call 1 ran out of time at ~96 %, with no failure until then).
#   bash bench/results/h200-20261201-fifteenth/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 120 python3 bench/kernels.py --out "$OUT/d256" --dtype bf16 --hdim 256 --mode fwdbwd --no-nanogpt \
    --seqlens 1024 2048 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 95 \
    --variant dq3='{"bwd_dq": {"num_stages": 3}}' \
    --variant np='{"bwd_dkdv": {"PERSISTENT": false}}' \
    --variant dq3np='{"bwd_dq": {"num_stages": 3}, "bwd_dkdv": {"PERSISTENT": false}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
timeout 110 python3 bench/kernels.py --out "$OUT/d160_192" --dtype bf16 fp16 --hdim 160 192 --mode fwdbwd --no-nanogpt \
    --seqlens 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 85 \
    --variant dq3='{"bwd_dq": {"num_stages": 3}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
timeout 340 python3 -m pytest tests -m "gpu and not bigmem" -k "not past_d128" -q -p no:warnings -n 12 -rf 2>&1 \
    | grep -v "Warn\|warner" | tail -25 | tee "$OUT/gpu_suite.txt"
