# Device call 1 (nvidia-h200), 2026-12-02, fifth part: HALF_LAST (a warpgroup whose rows see nothing in
# the second half of its last key block multiplies that block over its first half only: the first
# warpgroup's block on a causal diagonal). The Gluon forward's GPU tests (the new
# test_gluon_forward_half_last, both settings, every schedule; with it the forward tests that now
# run with HALF_LAST by default: reference shapes, windows, varlen, short causal, 192 queries, candidates), then short_fwd.py's GPU time (interleaved), the default
# against HALF_LAST off, PASSES passes (2 unless set).
# Ran on e861038 with half_last.patch applied (reverted after): to repeat,
#   git apply bench/results/h200-20261202-half-last/half_last.patch
#   bash bench/results/h200-20261202-half-last/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
T=$PWD/bench/results/h200-20261201-twentieth
timeout 280 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf -k "half_last or \
    matches_reference or windows or varlen or short_causal or three_warpgroups or every_candidate or 192_queries" \
    2>&1 | grep -v "^\s*$" | tail -8 | tee "$OUT/tests.txt"
export POINTS='[[16,32,1024,64,true],[64,12,1024,64,true],[16,16,1024,128,true],[32,16,512,128,true],
  [4,32,4096,64,true],[4,16,4096,128,true],[16,32,960,64,false],[16,32,1024,64,false]]'
for r in $(seq ${PASSES:-2}); do
  (cd "$T" && timeout 140 python3 short_fwd.py nohalf='{"fwd": {"HALF_LAST": false}}') \
      2>&1 | grep -v Warn > "/tmp/r$r.txt"; mv "$OUT/short_fwd.json" "$OUT/short_fwd_$r.json"
done
for r in $(seq ${PASSES:-2}); do echo "== pass $r"; grep '^|' "/tmp/r$r.txt"; done
