# Device call 3 of the nineteenth part (nvidia-h200), at cf53a18: SUM_MMA, the forward's row sums
# by the tensor cores (P times a tile of ones: one FADD per score fewer, calls 1-2 having shown
# the softmax issue-bound). Speed first, 3 rounds, beside SDPA cuDNN and flash: bf16 d64 (S1k-16k,
# causal or not, nanoGPT's shape) and d128, fp8 d128, default against `sum` / `fp8sum`; then
# the SUM_MMA GPU tests (every schedule).
#   bash bench/results/h200-20261201-nineteenth/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
S='{"fwd": {"SUM_MMA": true}}'
timeout 150 python3 bench/kernels.py --out "$W/d64" --dtype bf16 --hdim 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --variant "sum=$S" --rounds 3 2>&1 \
    | grep -v Warn | grep "^bf16\|nanoGPT"
timeout 130 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash --variant "fp8sum=$S" --rounds 3 \
    --no-nanogpt 2>&1 | grep -v Warn | grep "^bf16"
timeout 110 python3 bench/kernels.py --out "$W/d128" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --variant "sum=$S" --rounds 3 \
    --no-nanogpt 2>&1 | grep -v Warn | grep "^bf16"
for r in d64 fp8 d128; do cp $W/$r/results.md "$OUT/$r.md"; done
timeout 170 python3 -m pytest tests/test_gluon_forward.py -k "row_sums" -q -p no:warnings -n 14 -rf 2>&1 \
    | grep -v "Warn\|warner" | tail -30 | tee "$OUT/tests.txt"
rm -f $W/*/*.png
tar czf "$OUT/call3_all.tgz" -C "$OUT" w
