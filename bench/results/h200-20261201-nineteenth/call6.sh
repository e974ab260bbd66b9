# Device call 6 of the nineteenth part (nvidia-h200), at 0898b98: backward_gluon._probs_t, one helper for
# the S^T / dP^T multiplies and P^T of both dK/dV loops (the SASS keeps its instructions, some
# in another order). The Gluon backward's GPU tests; then fwd+bwd bf16 d64 and d128 (S1k / 4k /
# 16k, causal or not, 3 rounds, SDPA cuDNN and flash beside), this code and 296ab9f's python/
# (old_tree/, an untracked copy) in the same call.
#   bash bench/results/h200-20261201-nineteenth/call6.sh      (from the repo root, old_tree/ beside)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 260 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -p no:warnings -n 14 -rf 2>&1 \
    | grep -v "Warn\|warner" | grep -v "^\s*$" | tail -12 | tee "$OUT/tests.txt"
for r in new old; do
  P=$PWD/python; [ $r = old ] && P=$PWD/old_tree/python
  for d in 64 128; do
    PYTHONPATH=$P timeout 130 python3 bench/kernels.py --out "$W/${r}_d$d" --dtype bf16 --hdim $d --mode fwdbwd \
        --causal both --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 \
        --no-nanogpt 2>&1 | grep "^bf16" | sed "s/^/$r /"
    cp $W/${r}_d$d/results.md "$OUT/${r}_d$d.md"
  done
done
rm -f $W/*/*.png
tar czf "$OUT/call6_all.tgz" -C "$OUT" w
