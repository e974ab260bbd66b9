# Device call 1 of the nineteenth part (nvidia-h200), at 6996e2f: EXP2_FMA, part of the forward's
# exponentials on the FMA units (a polynomial, common.exp2_fma) so the MUFU unit, 16 results per
# cycle per SM and at d128 fp8 as slow as the multiplies, is not alone. Its GPU tests; then the
# fp8 forward at d128 with one column in 2, 4 or 8 by the polynomial (fp8e2 / fp8e4 / fp8e8)
# against the default (all by the MUFU), beside SDPA cuDNN and flash, S1k-16k, 3 rounds.
#   bash bench/results/h200-20261201-nineteenth/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 -m pytest tests/test_gluon_forward.py tests/test_triton_kernels.py -k "exp2" -q -p no:warnings \
    -n 14 -rf 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
v() { echo "$1={\"fwd\": {\"EXP2_FMA\": $2}}"; }
timeout 330 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant "$(v fp8e2 2)" --variant "$(v fp8e4 4)" --variant "$(v fp8e8 8)" --rounds 3 --no-nanogpt 2>&1 \
    | grep -v Warn | grep "^bf16"
cp $W/fp8/results.md "$OUT/fp8.md"
rm -f $W/*/*.png
tar czf "$OUT/call1_all.tgz" -C "$OUT" w
