# Device call 1 of the eighteenth part (nvidia-h200), at b19b7b0: the fp8 Gluon forward with three
# consumer warpgroups (BLOCK_M 192: a third warp per scheduler to hide the softmax's latencies),
# P staged (fp8q192s) or in registers (fp8q192r, 12 spill instructions in its loop in the sm90
# compile), against the default (two warpgroups, P in registers) and two warpgroups with P staged
# (fp8staged), beside fa_ck's bf16 forward, SDPA cuDNN and flash, d128 S1k-16k, causal or not, 3
# rounds. Then the Gluon fp8 forward's tests (both block heights, both P paths, every schedule)
# and the bf16 Gluon forward's reference tests in two schedules (the kernel's arguments moved).
#   bash bench/results/h200-20261201-eighteenth/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 260 python3 bench/kernels.py --out "$W/d128" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8staged='{"fwd": {"P_REGS": false}}' --variant fp8q192s='{"fwd": {"BLOCK_M": 192, "P_REGS": false}}' \
    --variant fp8q192r='{"fwd": {"BLOCK_M": 192}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -12
cp $W/d128/results.md "$OUT/d128.md"
timeout 280 python3 -m pytest tests/test_gluon_forward.py -k "test_gluon_fp8_forward or (matches_reference and (defaults or per-tile))" \
    -q -p no:warnings -n 14 -rf 2>&1 | grep -v "Warn\|warner" | tail -12 | tee "$OUT/tests.txt"
rm -f $W/*/*.png
tar czf "$OUT/call1_all.tgz" -C "$OUT" w
