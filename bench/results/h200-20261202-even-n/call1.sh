# Device call 1 (nvidia-h200), 2026-12-02, fifth part: EVEN_N (seqlen_k a whole number of key blocks, not
# varlen: the Gluon forward of a call with no window compiles no masked softmax; SASS, Triton 3.6: d128
# S4096 full 4744 -> 3240 instructions, d64 S4096 full (192 queries) 6496 -> 4152 and its 32 bytes of
# spills gone, d64 S1024 full 4368 -> 2856). The new GPU test (every schedule) and the forward tests that
# run it by default; then GPU time with the host hidden, this tree against main's (`head_python/`: 9a7d9ba's
# python/, an untracked copy, not committed), in the order this tree, main, this tree.
#   bash bench/results/h200-20261202-even-n/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-even-n
T=$PWD/bench/results/h200-20261201-twentieth
timeout 180 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf -k "even_keys or \
    matches_reference or 192_queries or three_warpgroups or every_candidate" 2>&1 | grep -v "^\s*$" | tail -8 \
    | tee "$OUT/tests.txt"
export POINTS='[[16,16,1024,128,false],[4,16,4096,128,false],[1,16,16384,128,false],[16,32,1024,64,false],
  [4,32,4096,64,false],[1,32,16384,64,false],[32,32,512,64,false],[64,12,1024,64,true]]'
run() {   # run NAME TREE
  (cd "$T" && PYTHONPATH=$2 timeout 120 python3 short_fwd.py) 2>&1 | grep -v Warn > "/tmp/$1.txt"
  mv "$OUT/short_fwd.json" "$OUT/$1.json"
}
run even_1 "$PWD/python"; run main_1 "$D/head_python"; run even_2 "$PWD/python"
for n in even_1 main_1 even_2; do echo "== $n"; grep '^|' "/tmp/$n.txt"; done
