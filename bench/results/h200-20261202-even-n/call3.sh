# Device call 3 (nvidia-h200), 2026-12-02, fifth part: DIAG_FIRST (causal calls with whole 128-query and
# 128-key blocks stream each tile's blocks last to first, so the diagonal's masked block is the first and
# the loop compiles no masked softmax; SASS, Triton 3.6: d64 S1024 causal 4784 -> 3472 instructions, d128
# S4096 causal 5168 -> 3800). The forward's GPU tests that reach it (every schedule, PINGPONG, fp8), then GPU
# time with the host hidden, this tree against 88f5f12's (EVEN_N, `head_python/`: an untracked copy, not
# committed), in the order this tree, 88f5f12, this tree.
#   bash bench/results/h200-20261202-even-n/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-even-n
T=$PWD/bench/results/h200-20261201-twentieth
timeout 140 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf -k "even_keys or \
    pingpong or fp8_forward or matches_reference" 2>&1 | grep -v "^\s*$" | tail -6 | tee "$OUT/tests.txt"
export POINTS='[[16,32,1024,64,true],[64,12,1024,64,true],[16,16,1024,128,true],[32,16,512,128,true],
  [4,32,4096,64,true],[4,16,4096,128,true],[1,16,16384,128,true]]'
run() {   # run NAME TREE
  (cd "$T" && PYTHONPATH=$2 timeout 75 python3 short_fwd.py) 2>&1 | grep -v Warn > "/tmp/$1.txt"
  mv "$OUT/short_fwd.json" "$OUT/$1.json"
}
run diag_1 "$PWD/python"; run even_1 "$D/head_python"; run diag_2 "$PWD/python"
for n in diag_1 even_1 diag_2; do echo "== $n"; grep '^|' "/tmp/$n.txt"; done
