# Device call 2 of the nineteenth part (nvidia-h200), at e306150: EXP2_FMA again, its NaN mended
# (exp2_fma multiplies by 2^j) and its tests; then where the MUFU unit is as slow as the
# multiplies in 16 bits: the bf16 forward at d64 (S1k-16k, causal or not, and nanoGPT's shape)
# with one column in 2, 4 or 8 by the polynomial (e2 / e4 / e8) against the default, beside SDPA
# cuDNN and flash, 3 rounds.
#   bash bench/results/h200-20261201-nineteenth/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 -m pytest tests/test_gluon_forward.py tests/test_triton_kernels.py -k "exp2" -q -p no:warnings \
    -n 14 -rf 2>&1 | grep -v "Warn\|warner" | tail -30 | tee "$OUT/tests.txt"
v() { echo "$1={\"fwd\": {\"EXP2_FMA\": $2}}"; }
timeout 330 python3 bench/kernels.py --out "$W/d64" --dtype bf16 --hdim 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --variant "$(v e2 2)" --variant "$(v e4 4)" --variant "$(v e8 8)" --rounds 3 2>&1 \
    | grep -v Warn | grep "^bf16\|nanoGPT"
cp $W/d64/results.md "$OUT/d64.md"
rm -f $W/*/*.png
tar czf "$OUT/call2_all.tgz" -C "$OUT" w
