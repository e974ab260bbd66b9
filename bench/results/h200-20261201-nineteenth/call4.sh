# Device call 4 of the nineteenth part (nvidia-h200), at e6dada4: LOOKAHEAD, S_{j+1} issued before
# softmax(S_j) so the softmax runs under the next QK^T as well as the PV multiply (calls 1-3:
# neither the MUFU unit nor issue slots bound the d64 forward, so latency between the multiply
# and the softmax may). bf16 d64 forward (S1k-16k, causal or not, nanoGPT's shape), default
# against `la`, beside SDPA cuDNN and flash, 3 rounds; then its GPU tests (every schedule).
#   bash bench/results/h200-20261201-nineteenth/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 bench/kernels.py --out "$W/d64" --dtype bf16 --hdim 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --variant 'la={"fwd": {"LOOKAHEAD": true}}' \
    --rounds 3 2>&1 | grep -v Warn | grep "^bf16\|nanoGPT"
cp $W/d64/results.md "$OUT/d64.md"
timeout 250 python3 -m pytest tests/test_gluon_forward.py -k "lookahead" -q -p no:warnings -n 14 -rf 2>&1 \
    | grep -v "Warn\|warner" | grep -v "^\s*$" | tail -40 | tee "$OUT/tests.txt"
rm -f $W/*/*.png
tar czf "$OUT/call4_all.tgz" -C "$OUT" w
