# Device call 3 of this folder (nvidia-h200), 2026-12-03: issue 6's whole bf16 sweep at this tree (d64 / d128 /
# d256, S512-16k, causal or not, fwd and fwd+bwd, nanoGPT's shape), fa_ck's defaults beside SDPA cuDNN and
# flash, 2 rounds (median of two interleaved timings); then issue 7's record: the fp8 forward at d128
# S512-16k beside fa_ck's bf16 forward, cuDNN and flash, 3 rounds, with its error against float64.
#   bash bench/results/h200-20261203-standing/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 420 python3 bench/kernels.py --out "$OUT/sweep" --dtype bf16 --hdim 128 64 256 --mode both --causal both \
    --seqlens 512 1024 2048 4096 8192 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 2 \
    --time-budget 395 2>&1 | grep -v Warn | grep "MISS\|met\|rows"
timeout 140 python3 bench/kernels.py --out "$OUT/fp8" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 512 1024 2048 4096 8192 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 3 \
    --no-nanogpt --time-budget 120 2>&1 | grep -v Warn | grep "rows"
rm -f "$OUT"/*/*.png
grep -A16 "## Forward: TFLOP" "$OUT/fp8/results.md"
