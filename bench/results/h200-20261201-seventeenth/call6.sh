# Device call 6 of the seventeenth part (nvidia-h200), at a1dd045: K_LATE (the fourteenth part's switch:
# K_j's buffer released beside V_{j-1}'s after the PV wait; level on bf16 then) on the fp8 kernel,
# whose warps wait at the per-block warpgroup syncs (call 2): fp8 forward d128 S4k / S16k, 3 rounds,
# default against K_LATE (fp8late) and K_LATE with 3-deep rings (fp8latest3); the error column
# against float64 checks each variant's numbers.
#   bash bench/results/h200-20261201-seventeenth/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 bench/kernels.py --out "$W/late" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash --variant fp8late='{"fwd": {"K_LATE": true}}' \
    --variant fp8latest3='{"fwd": {"K_LATE": true, "num_stages": 3}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn \
    | grep "^bf16"
cp $W/late/results.md "$OUT/late.md"
rm -f $W/*/*.png
