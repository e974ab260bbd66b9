# Device call 4 of this folder (nvidia-h200), 2026-12-03 (sixth session), at the commit that adds it:
# LATE_SUM (new fp8 forward switch, off by default here): P_j's row sum added in the next block,
# not beside its exponentials (ptxas put each FADD two MUFUs after the one it reads).
# (1) fp8 forward d128 and d64, S1k / S4k / S16k, full and causal: default against `late`, 3 rounds,
#     SDPA cuDNN and flash beside (speed and error against float64);
# (2) timeline.py: fp8 and fp8late at both shapes.
#   bash bench/results/h200-20261203-timeline/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 300 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant late='{"fwd": {"LATE_SUM": true}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -4
cp $W/fp8/results.md "$OUT/fp8.md"; cat "$OUT/fp8.md" | cut -c1-250
timeout 150 python3 bench/results/h200-20261203-timeline/timeline.py --out "$OUT" --variants fp8,fp8late 2>&1 | grep -v Warn | tail -6
