# Device call 5 of the sixteenth part (nvidia-h200): q, k and v quantised in one launch per pass
# (amax, then the scaled copy: two launches instead of six), at 9c9c140 (with the review's mends of
# a2e0959). Host time per call first (this code,
# then a2e0959's python/ tree in old_a2e0959/, six quantisation launches); the fp8 forward at d128
# S512-16k beside fa_ck's bf16 forward, SDPA cuDNN and flash, and a2e0959's fp8 at S512-4k in the
# same run (one timing per point); the fp8 tests.
#   bash bench/results/h200-20261201-sixteenth/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 100 python3 bench/host.py --out "$W/host_new" 2>&1 | grep -v Warn | tail -1
PYTHONPATH=$PWD/old_a2e0959/python timeout 100 python3 bench/host.py --out "$W/host_old" 2>&1 | grep -v Warn | tail -1
cat $W/host_new/results.md $W/host_old/results.md > "$OUT/host_new_old.md"
timeout 150 python3 bench/kernels.py --out "$W/fp8_new" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 512 1024 2048 4096 8192 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 1 \
    --no-nanogpt 2>&1 | grep -v Warn | tail -16
PYTHONPATH=$PWD/old_a2e0959/python timeout 100 python3 bench/kernels.py --out "$W/fp8_old" --dtype bf16 --hdim 128 \
    --mode fwd --causal both --seqlens 512 1024 2048 4096 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 1 \
    --no-nanogpt 2>&1 | grep -v Warn | tail -12
cp $W/fp8_new/results.md "$OUT/fp8_new.md"; cp $W/fp8_old/results.md "$OUT/fp8_old.md"
timeout 150 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py -k "fp8 or replays or one_tensor" -q \
    -p no:warnings -n 8 -rf 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/fp8_tests.txt"
rm -f $W/*/*.png
tar czf "$OUT/call5_all.tgz" -C "$OUT" w
