# Device call 2 of this folder (nvidia-h200), 2026-12-03 (fourth session): Q_CONVERT, the Gluon fp8
# forward rounding q itself (from q's amax bits, quantize_kernel's arithmetic) so the quantisation
# launch writes no q8: one read of q instead of two reads and a write. On by default in this tree.
# (1) fp8 d128 forward S1k / S4k / S16k, the default against fp8copyq (Q_CONVERT off: q8 written
#     as before), 5 rounds, SDPA cuDNN and flash beside;
# (2) GPU tests: Q_CONVERT against q8 bit for bit (out and lse; host-made and device-built
#     descriptors), test_fp8.py whole, the Gluon fp8 forward in two schedules, test_host_path's fp8 ones.
#   bash bench/results/h200-20261203-late-wait/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8copyq='{"fwd": {"Q_CONVERT": false}}' --rounds 5 --no-nanogpt 2>&1 | grep -v Warn | tail -10
cp $W/fp8/results.md "$OUT/fp8.md"
timeout 250 python3 -m pytest tests/test_gluon_forward.py tests/test_fp8.py tests/test_host_path.py \
    -k "bit_for_bit or test_fp8.py or (gluon_fp8 and (defaults or device-desc-persistent)) or (host_path and fp8)" \
    -q -p no:warnings -n 12 -rf 2>&1 | grep -v "Warn\|warner" | tail -12 | tee "$OUT/tests.txt"
rm -f $W/*/*.png
tar czf "$OUT/call2_all.tgz" -C "$OUT" w
