# Device call 1 of this folder (nvidia-h200), 2026-12-03 (eighth session):
# LATE_RESCALE (new, off): O is rescaled by block j-1's alpha in block j, after S_j = Q K_j^T is issued
# and before P_{j-1} V_{j-1} is (FlashAttention-3's order), not after the PV wait at the end of
# block j-1, where its FMULs sat on each warpgroup's serial chain.
# (1) GPU tests of the Gluon forward in the new schedule `late-rescale-persistent-3` (16-bit and fp8);
# (2) fp8 d128 and d64, full and causal, S1k / S4k / S16k: default against fp8resc, 3 rounds, cuDNN and
#     flash beside;
# (3) bf16 the same points: default against resc.
#   bash bench/results/h200-20261203-rescale/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 14 -rf \
    -k "late-rescale" 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
timeout 190 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8resc='{"fwd": {"LATE_RESCALE": true}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -2
timeout 150 python3 bench/kernels.py --out "$W/bf16" --dtype bf16 --hdim 128 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn \
    --variant resc='{"fwd": {"LATE_RESCALE": true}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -2
for r in fp8 bf16; do cp $W/$r/results.md "$OUT/$r.md"; cp $W/$r/results.json "$OUT/$r.json"; grep -A16 "## Forward: TFLOP" "$OUT/$r.md"; done
grep -A16 "relative error" "$OUT/fp8.md"
