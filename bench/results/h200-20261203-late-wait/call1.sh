# Device call 1 of this folder (nvidia-h200), 2026-12-03 (fourth session): LATE_WAIT, the Gluon
# forward's wait for the PV multiply placed where ptxas cannot hoist it above the softmax's
# exponentials (forward_gluon._wait_after; compiled for sm90 on the CPU under Triton 3.6 and 3.7.1:
# without it every loop's WARPGROUP.DEPBAR sits before all 66 MUFU.EX2, with it after them).
# (1) fp8 d128 forward S4k / S16k, the default against fp8late, 3 rounds, SDPA cuDNN and flash beside;
# (2) bf16 forward d128 / d64 S4k / S16k and nanoGPT's shape, the default against late;
# (3) the Gluon forward's GPU tests in the late-wait schedule (fp8 and 16-bit, windows, varlen).
#   bash bench/results/h200-20261203-late-wait/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 150 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash --variant fp8late='{"fwd": {"LATE_WAIT": true}}' \
    --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -14
timeout 200 python3 bench/kernels.py --out "$W/bf16" --dtype bf16 --hdim 128 64 --mode fwd --causal both \
    --seqlens 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --variant late='{"fwd": {"LATE_WAIT": true}}' \
    --rounds 3 --autograd-threads off 2>&1 | grep -v Warn | tail -16
timeout 170 python3 -m pytest tests/test_gluon_forward.py -m "gpu and not bigmem" \
    -k "late-wait and not persistent and (fp8_forward or matches_reference or windows or varlen or even_keys)" \
    -q -p no:warnings -n 12 -rf 2>&1 | grep -v "Warn\|warner" | tail -12 | tee "$OUT/tests.txt"
cp $W/fp8/results.md "$OUT/fp8.md"; cp $W/bf16/results.md "$OUT/bf16.md"
rm -f $W/*/*.png
tar czf "$OUT/call1_all.tgz" -C "$OUT" w
