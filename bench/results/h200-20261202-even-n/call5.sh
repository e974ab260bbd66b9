# Device call 5 (nvidia-h200), written 2026-12-02 (sixth part), run 2026-12-02 16:02 UTC (seventh part; the
# patch applied without its tools/ hunk, which 9d48767 made needless).
# diag_first_64.patch: DIAG_FIRST with 64-key blocks too (short causal d33-64 calls, head dims past 128):
# each warpgroup first releases unread the tile's last block when it cannot see it (the first warpgroup's
# second diagonal block), then masks the next and no other. SASS (Triton 3.6, d64 S512 causal): 3352 ->
# 2528 instructions, no spills. First the GPU tests that reach it (failures named), then GPU time with the
# host hidden against main (`head_python/`: main's python/, an untracked copy), this tree, main, this tree.
#   git apply bench/results/h200-20261202-even-n/diag_first_64.patch
#   rm -rf bench/results/h200-20261202-even-n/head_python && mkdir -p bench/results/h200-20261202-even-n/head_python \
#     && git archive HEAD python | tar -x -C /tmp && cp -r /tmp/python/* bench/results/h200-20261202-even-n/head_python/
#   bash bench/results/h200-20261202-even-n/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-even-n
T=$PWD/bench/results/h200-20261201-twentieth
timeout 200 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf -k "even_keys or \
    short_causal or windows or varlen or fp8_forward or past_128" 2>&1 | grep -v "^\s*$" | tail -12 | tee "$OUT/tests.txt"
export POINTS='[[32,32,512,64,true],[64,32,256,64,true],[32,8,512,256,true],[16,8,1024,256,true],
  [64,12,1024,64,true],[32,16,512,128,true]]'
run() {   # run NAME TREE
  (cd "$T" && PYTHONPATH=$2 timeout 80 python3 short_fwd.py) 2>&1 | grep -v Warn > "/tmp/$1.txt"
  mv "$OUT/short_fwd.json" "$OUT/$1.json"
}
run diag64_1 "$PWD/python"; run main_1 "$D/head_python"; run diag64_2 "$PWD/python"
for n in diag64_1 main_1 diag64_2; do echo "== $n"; grep '^|' "/tmp/$n.txt"; done
