# Device call 1 (nvidia-h200), 2026-12-02, fourth part: SPLIT_Q (asked for) in the 128-query Gluon
# forward: Q as two 64-row boxes, each warpgroup on its own Q barriers, the second's Q after the tile's
# first K / V blocks (as 192-query tiles load theirs since aeacb82). Its GPU tests in every schedule, then
# GPU time with the host hidden (short_fwd.py, median of 25), default against `splitq`, twice, at the
# points issue 6 misses or nearly misses (d128 full and causal S1k-16k, d64 short causal and nanoGPT).
#   bash bench/results/h200-20261202-split-q/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
T=$PWD/bench/results/h200-20261201-twentieth
timeout 200 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf -k "split_q" 2>&1 \
    | grep -v "^\s*$" | tail -8 | tee "$OUT/tests.txt"
export POINTS='[[16,16,1024,128,false],[4,16,4096,128,false],[1,16,16384,128,false],[4,16,4096,128,true],
  [1,16,16384,128,true],[16,32,1024,64,true],[64,12,1024,64,true],[32,32,512,64,false],[4,32,4096,64,true]]'
for r in 1 2; do
  (cd "$T" && timeout 120 python3 short_fwd.py splitq='{"fwd": {"SPLIT_Q": true}}') 2>&1 | grep -v Warn \
      > "/tmp/r$r.txt"; mv "$OUT/short_fwd.json" "$OUT/short_fwd_$r.json"
done
for r in 1 2; do echo "== round $r"; grep '^|' "/tmp/r$r.txt"; done
