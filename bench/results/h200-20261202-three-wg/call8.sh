# Device call 8 (nvidia-h200), 2026-12-02, fourth part: own_q_barriers.patch with its deadlock mended (the
# device-descriptor path waited on all four Q barriers of a 192-query tile, the fourth never arrived on:
# call 7's tests hung after 33 passed). The three-warpgroup, varlen and window GPU tests first; then GPU
# time with the host hidden, this tree against main's (`head_python/`: 4aac2b3's python/, an untracked
# copy, not committed), alternately twice: d64 full S2k-16k (192 by default) and causal S4k / S16k with 192
# asked (`bm192`).
#   bash bench/results/h200-20261202-three-wg/call8.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-three-wg
T=$PWD/bench/results/h200-20261201-twentieth
timeout 240 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf \
    -k "192_queries_by_default or three_warpgroups or windows or varlen" 2>&1 | grep -v "^\s*$" | tail -6 \
    | tee "$OUT/tests.txt"
export POINTS='[[8,32,2048,64,false],[4,32,4096,64,false],[2,32,8192,64,false],[1,32,16384,64,false],
  [4,32,4096,64,true],[1,32,16384,64,true]]'
for r in 1 2; do
  (cd "$T" && timeout 100 python3 short_fwd.py bm192='{"fwd": {"BLOCK_M": 192}}') 2>&1 | grep -v Warn \
      > "/tmp/own_q_$r.txt"; mv "$OUT/short_fwd.json" "$OUT/own_q_$r.json"
  (cd "$T" && PYTHONPATH=$D/head_python timeout 100 python3 short_fwd.py bm192='{"fwd": {"BLOCK_M": 192}}') 2>&1 \
      | grep -v Warn > "/tmp/main_$r.txt"; mv "$OUT/short_fwd.json" "$OUT/main_$r.json"
done
for r in 1 2; do echo "== own Q barriers, round $r"; grep '^|' "/tmp/own_q_$r.txt"; echo "== main, round $r"
  grep '^|' "/tmp/main_$r.txt"; done
