# Device call 3 of the fifteenth part (nvidia-h200), main's code at the commit named in the README:
# the wide backward's GPU tests again at the new default (dQ 3-deep rings past d128), then issue 6's
# sweep with fa_ck's default kernels beside SDPA cuDNN and flash (bf16, d64 / d128 / d256,
# S512-16k, causal or not, fwd and fwd+bwd, nanoGPT's shape; one timing per point), then
# profile_short.py: per-kernel time of one fwd+bwd at the short shapes, fa_ck and cuDNN.
#   bash bench/results/h200-20261201-fifteenth/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 -m pytest tests/test_gluon_backward.py -m gpu -k "past_d128" -q -p no:warnings -rf -n 8 2>&1 \
    | grep -v "Warn\|warner" | tail -8 | tee "$OUT/wide_tests.txt"
timeout 280 python3 bench/kernels.py --out "$OUT/sweep" --dtype bf16 --hdim 64 128 256 --mode both --causal both \
    --seqlens 512 1024 2048 4096 8192 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 1 \
    --time-budget 250 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
timeout 90 python3 bench/results/h200-20261201-fifteenth/profile_short.py 2>&1 | grep -v Warn | tee "$OUT/profile_short.txt" | head -60
