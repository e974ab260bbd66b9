# Device call 5 of the twentieth part (nvidia-h200), at 38a7bad; not yet run (no device was lent
# in the twenty-first part). Three changes to the short forwards:
#  - on main since 1a516e5: the Gluon forward takes 64 keys per block on short causal d33-64
#    calls (configs.fwd_gluon_short_causal, from call 1); 'bn128' asks for the 128 of before;
#  - one_bound.patch (not on main): the mask as one compare per score (common.scores: the right
#    edge and the sequence's end as one bound per query; the Gluon forward counts keys from the
#    block's first);
#  - per_warpgroup_blocks.patch (not on main): each consumer warpgroup of the Gluon forward masks
#    by its own 64 rows, and leaves unread the blocks its rows cannot see (64-key blocks: the
#    diagonal's two blocks are one masked and one whole or skipped per warpgroup, not two masked).
# The GPU tests of the kernels they touch, on both/ (main + both patches; main's tests, among
# them test_gluon_forward_short_causal_takes_64_keys); then short_fwd.py (GPU time with the host
# hidden; d64 S256-1k, d128 S512) on main (default, bn128) and on both/, beside SDPA cuDNN and flash.
#   bash bench/results/h200-20261201-twentieth/trees.sh      (from the repo root; makes one/ pw/ both/)
#   bash bench/results/h200-20261201-twentieth/call5.sh
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261201-twentieth
PYTHONPATH=$PWD/both/python timeout 250 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py \
    tests/test_triton_kernels.py tests/test_features.py -m "gpu and not bigmem" -q -p no:warnings -n 14 -rf 2>&1 \
    | grep -v "Warn\|warner" | grep -v "^\s*$" | tail -12 | tee "$OUT/tests.txt"
export POINTS='[[64, 32, 256, 64, true], [48, 32, 384, 64, true], [32, 32, 512, 64, true], [32, 32, 512, 64, false],
  [64, 12, 1024, 64, true], [32, 16, 512, 128, true], [32, 16, 512, 128, false]]'
timeout 170 python3 $D/short_fwd.py 'bn128={"fwd": {"BLOCK_N": 128}}' 2>&1 | grep -v Warn > "$OUT/main.txt"
mv "$OUT/short_fwd.json" "$OUT/main.json"
PYTHONPATH=$PWD/both/python timeout 150 python3 $D/short_fwd.py 2>&1 | grep -v Warn > "$OUT/both.txt"
mv "$OUT/short_fwd.json" "$OUT/both.json"
grep -v "^{" "$OUT/main.txt" | tail -30; grep fa_ck "$OUT/both.txt" | tail -7
