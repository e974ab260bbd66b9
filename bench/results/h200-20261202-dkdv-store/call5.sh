# Device call 5 of this folder (nvidia-h200, 2026-12-02; call 8 of the session, on the last ~430 s of device
# time): nanoGPT 124M with the session's TMA stores (the d256 forward's out, dK / dV up to 1024 query rows, the
# dQ kernel's dQ), sdpa against triton, as h200-20261202-direct call 6 (fp8 left out for time).
#   bash bench/results/h200-20261202-dkdv-store/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 300 python3 bench/nanogpt.py --attn sdpa,triton --steps 200 --batch 64 --block 1024 \
    --time-budget 150 --no-plots --out "$OUT/nanogpt" 2>&1 | tail -12
