# Device call 4 of the seventeenth part (nvidia-h200), at 1a16a20: the record after P_REGS. The fp8
# forward at d128 S512-16k, causal or not, beside fa_ck's bf16 forward, SDPA cuDNN and flash (3
# rounds); d64, where forward.py's fp8 kernel is the default, against the Gluon one asked for
# (fp8gl; call 1's d64 S1k points took the slow path every call), 1 round; nanoGPT 124M,
# 200 steps, sdpa and triton-fp8 (issue 7: within 0.05 of sdpa's loss).
#   bash bench/results/h200-20261201-seventeenth/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 bench/kernels.py --out "$W/d128" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 512 1024 2048 4096 8192 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 3 \
    --no-nanogpt 2>&1 | grep -v Warn | grep "^bf16"
cp $W/d128/results.md "$OUT/d128.md"
timeout 80 python3 bench/kernels.py --out "$W/d64" --dtype bf16 --hdim 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash --variant fp8gl='{"fwd": {"GLUON": true}}' \
    --rounds 1 --no-nanogpt 2>&1 | grep -v Warn | grep "^bf16"
cp $W/d64/results.md "$OUT/d64.md"
timeout 240 python3 bench/nanogpt.py --attn sdpa,triton-fp8 --steps 200 --batch 64 --block 1024 --time-budget 220 \
    --no-plots --out "$W/nanogpt" 2>&1 | grep -v Warn | tail -8
cp $W/nanogpt/results.md "$OUT/nanogpt.md" 2>/dev/null
rm -f $W/*/*.png
tar czf "$OUT/call4_all.tgz" -C "$OUT" w
