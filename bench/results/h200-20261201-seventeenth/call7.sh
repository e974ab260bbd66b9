# Device call 7 of the seventeenth part (nvidia-h200), at ac027ec: 256-key blocks for the fp8
# forward (half the per-block syncs per key), P staged (P in registers does not fit: 104 bytes of
# stack and serialised wgmmas in the sm90 compile; staged spills 80 bytes), against P staged at 128
# keys and the default (P in registers, 128 keys), d128 S4k / S16k, 3 rounds; the error column
# against float64 checks each variant's numbers.
#   bash bench/results/h200-20261201-seventeenth/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 bench/kernels.py --out "$W/bn256" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash --variant fp8staged='{"fwd": {"P_REGS": false}}' \
    --variant fp8staged256='{"fwd": {"P_REGS": false, "BLOCK_N": 256}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn \
    | grep "^bf16\|rror"
cp $W/bn256/results.md "$OUT/bn256.md"
rm -f $W/*/*.png
