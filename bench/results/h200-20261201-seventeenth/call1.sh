# Device call 1 of the seventeenth part (nvidia-h200), at da2bb65: the fp8 Gluon forward with P in
# registers (P_REGS, new default) against P staged through shared memory (the variant fp8staged),
# fa_ck's bf16 forward, SDPA cuDNN and flash, d128, S1k / 4k / 16k, causal or not, 3 rounds; d64
# with the Gluon fp8 kernel asked for (fp8gl, P_REGS) beside forward.py's fp8 (d64's default), 1
# round. The fp8 tests first (test_fp8.py and the Gluon forward's fp8 tests, both P paths).
#   bash bench/results/h200-20261201-seventeenth/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py -k "fp8 or replays or one_tensor" -q \
    -p no:warnings -n 8 -rf 2>&1 | grep -v "Warn\|warner" | tail -12 | tee "$OUT/fp8_tests.txt"
timeout 240 python3 bench/kernels.py --out "$W/d128" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8staged='{"fwd": {"P_REGS": false}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -10
cp $W/d128/results.md "$OUT/d128.md"
timeout 100 python3 bench/kernels.py --out "$W/d64" --dtype bf16 --hdim 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8gl='{"fwd": {"GLUON": true}}' --rounds 1 --no-nanogpt 2>&1 | grep -v Warn | tail -8
cp $W/d64/results.md "$OUT/d64.md"
rm -f $W/*/*.png
tar czf "$OUT/call1_all.tgz" -C "$OUT" w
