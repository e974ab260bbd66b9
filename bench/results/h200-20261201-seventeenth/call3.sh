# Device call 3 of the seventeenth part (nvidia-h200), at b6bf136: P in registers only where fa_ck
# quantises (a caller's fp8 v read as it comes, P staged). The fp8 tests (test_fp8, the Gluon
# forward's fp8 tests with both P paths, test_host_path's fp8 replay); then fp8 schedules over
# P_REGS at d128 S4k / S16k (3 rounds): ping-pong (fp8pp), 3-deep rings (fp8st3, fits now that P
# leaves shared memory), both (fp8ppst3), beside the default, SDPA cuDNN and flash.
#   bash bench/results/h200-20261201-seventeenth/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 330 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py \
    -k "fp8 or replays or one_tensor" -q -p no:warnings -n 12 -rf 2>&1 | grep -v "Warn\|warner" | tail -12 \
    | tee "$OUT/tests.txt"
timeout 200 python3 bench/kernels.py --out "$W/var" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash --variant fp8pp='{"fwd": {"PINGPONG": true}}' \
    --variant fp8st3='{"fwd": {"num_stages": 3}}' --variant fp8ppst3='{"fwd": {"PINGPONG": true, "num_stages": 3}}' \
    --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | grep "^bf16"
cp $W/var/results.md "$OUT/variants.md"
rm -f $W/*/*.png
tar czf "$OUT/call3_all.tgz" -C "$OUT" w
