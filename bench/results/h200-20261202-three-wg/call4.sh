# Device call 4 (nvidia-h200), 2026-12-02, third part: 192 queries per tile at head dim 32 (not in the
# default rule, which stops at head dims 33-64) and d48, asked for against the default 128, GPU time with
# the host hidden; the GPU tests of the default rule's calls (fwd and the gradients through them) and of
# the three-warpgroup forward.
#   bash bench/results/h200-20261202-three-wg/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
T=$PWD/bench/results/h200-20261201-twentieth
export POINTS='[[4,32,4096,32,false],[1,32,16384,32,false],[4,32,4096,48,false]]'
(cd "$T" && timeout 100 python3 short_fwd.py bm192='{"fwd": {"BLOCK_M": 192}}' bm128='{"fwd": {"BLOCK_M": 128}}') \
    2>&1 | grep -v Warn > "$OUT/short_fwd.txt"
timeout 150 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf \
    -k "192_queries_by_default or three_warpgroups" 2>&1 | grep -v "^\s*$" | tail -6 | tee "$OUT/tests.txt"
grep '^|' "$OUT/short_fwd.txt"
