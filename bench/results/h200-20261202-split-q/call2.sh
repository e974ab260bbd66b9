# Device call 2 (nvidia-h200), 2026-12-02, fourth part: call 1 again with short_fwd.py's backends
# interleaved per repetition (gpu_time.gpu_ms_each), so clock drift during a point no longer falls on the
# later backends (in call 1's second pass cuDNN, timed after both fa_ck variants, read 4 % slower than in
# its first at d128 S16k). split_q.patch applied to a copy of this tree's python/ (/tmp/splitq), its
# default being main's. PASSES passes (2 unless set).
#   bash bench/results/h200-20261202-split-q/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-split-q
T=$PWD/bench/results/h200-20261201-twentieth
rm -rf /tmp/splitq && mkdir -p /tmp/splitq && cp -r python tests /tmp/splitq/ && find /tmp/splitq -name __pycache__ \
    -prune -exec rm -rf {} + && (cd /tmp/splitq && patch -p1 < "$D/split_q.patch") || exit 1
export POINTS='[[16,16,1024,128,false],[4,16,4096,128,false],[1,16,16384,128,false],[4,16,4096,128,true],
  [1,16,16384,128,true],[64,12,1024,64,true],[32,32,512,64,false]]'
for r in $(seq ${PASSES:-2}); do
  (cd "$T" && PYTHONPATH=/tmp/splitq/python timeout 130 python3 short_fwd.py splitq='{"fwd": {"SPLIT_Q": true}}') \
      2>&1 | grep -v Warn > "/tmp/r$r.txt"; mv "$OUT/short_fwd.json" "$OUT/short_fwd_$r.json"
done
for r in $(seq ${PASSES:-2}); do echo "== pass $r"; grep '^|' "/tmp/r$r.txt"; done
