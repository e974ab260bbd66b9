# Device call 7 (nvidia-h200), written at the end of 2026-12-02's third part for the next session with a
# device (not run yet): own_q_barriers.patch (over cc7c26b) gives each of the three warpgroups of a
# 192-query tile its own Q barriers and streams a tile's first K / V blocks before the third one's Q,
# so the two whose rows see fewer key blocks (under a causal mask, at the diagonal) start the next
# tile while the third finishes; the 128-query kernel's SASS is unchanged by it (Triton 3.6: d64 full /
# causal 4368 / 4784 instructions, d128 causal 5168), spills as before. The patched tree is made
# here (own_q/, outside the checkout); GPU time of main and the patch at d64, 192 queries asked
# (`bm192`) and by default, causal S1k-16k and the nanoGPT shape, full S4096; 3-deep rings with it
# (`bm192s3`: the ring's depth bounds how far ahead a warpgroup may run); then the three-warpgroup GPU
# tests on the patched tree.
#   bash bench/results/h200-20261202-three-wg/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-three-wg
T=$PWD/bench/results/h200-20261201-twentieth
rm -rf /tmp/own_q && mkdir -p /tmp/own_q && cp -r python /tmp/own_q/ && find /tmp/own_q -name __pycache__ -prune \
    -exec rm -rf {} + && (cd /tmp/own_q && patch -p1 < "$D/own_q_barriers.patch") || exit 1
export POINTS='[[16,32,1024,64,true],[64,12,1024,64,true],[4,32,4096,64,true],[1,32,16384,64,true],
  [4,32,4096,64,false]]'
V=(bm192='{"fwd": {"BLOCK_M": 192}}' bm192s3='{"fwd": {"BLOCK_M": 192, "num_stages": 3}}')
(cd "$T" && timeout 140 python3 short_fwd.py "${V[@]}") 2>&1 | grep -v Warn > "$OUT/short_fwd_main.txt"
mv "$OUT/short_fwd.json" "$OUT/short_fwd_main.json"
(cd "$T" && PYTHONPATH=/tmp/own_q/python timeout 140 python3 short_fwd.py "${V[@]}") 2>&1 | grep -v Warn \
    > "$OUT/short_fwd_own_q.txt"; mv "$OUT/short_fwd.json" "$OUT/short_fwd_own_q.json"
PYTHONPATH=/tmp/own_q/python timeout 200 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu \
    -n 16 -rf -k "192_queries_by_default or three_warpgroups" 2>&1 | grep -v "^\s*$" | tail -6 | tee "$OUT/tests.txt"
echo "== main"; grep '^|' "$OUT/short_fwd_main.txt"; echo "== own Q barriers"; grep '^|' "$OUT/short_fwd_own_q.txt"
