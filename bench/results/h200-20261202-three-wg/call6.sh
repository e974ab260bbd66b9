# Device call 6 (nvidia-h200), written at the end of 2026-12-02's third part for the next session with a
# device (not run yet): the three-warpgroup rule since cc7c26b counts the tiles' rounds over the SMs. GPU
# time where it now keeps 128 queries (few heads: B1 H8 S4096, B1 H4 S16384, B2 H4 S2048, B2 H8 S8192) and
# where it takes 192 (B4 H32 S4096), each against the other tile height asked, d64 full; then the
# default-path GPU test with its new d40 shape (12 heads of 2 batch entries) and the three-warpgroup tests.
#   bash bench/results/h200-20261202-three-wg/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
T=$PWD/bench/results/h200-20261201-twentieth
export POINTS='[[1,8,4096,64,false],[1,4,16384,64,false],[2,4,2048,64,false],[4,32,4096,64,false],
  [2,8,8192,64,false]]'
(cd "$T" && timeout 150 python3 short_fwd.py bm192='{"fwd": {"BLOCK_M": 192}}' bm128='{"fwd": {"BLOCK_M": 128}}') \
    2>&1 | grep -v Warn > "$OUT/short_fwd.txt"
timeout 200 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf \
    -k "192_queries_by_default or three_warpgroups" 2>&1 | grep -v "^\s*$" | tail -6 | tee "$OUT/tests.txt"
grep '^|' "$OUT/short_fwd.txt"
