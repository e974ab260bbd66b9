# Device call 2 of this folder (nvidia-h200), 2026-12-02, seventh part. Call 1: K in registers gained 1-3 %
# on one-pass calls and lost 3 % on the two-pass d64 S1024 full call, where 10 GPU tests failed (two-pass
# asks, full attention). So K_REGS is now for ONE_PASS only (this tree). Here: (1) call 1's GPU tests on
# this tree, failures named; (2) one of call 1's failing cases on that tree (`kall_python/`: K in
# registers in two-pass calls too: 86bf0e7 with k_regs_two_pass_too.patch), its gradients' errors; (3) the
# forward with Q in registers (`qregs_python/`: this tree plus q_regs.patch, QK^T from registers in every
# tile) against this tree, GPU time with the host hidden (short_fwd.py), trees alternating in separate
# processes. The tree copies are untracked, not committed.
#   bash bench/results/h200-20261202-kvregs/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-kvregs
T=$PWD/bench/results/h200-20261201-twentieth
timeout 200 python3 -m pytest tests/test_gluon_backward.py -q -p no:warnings -m gpu -n 16 -rf -k \
    "dkdv_matches_reference or dkdv_windows or persistent_takes or gqa_matches" 2>&1 | grep -v "^\s*$" \
    | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
PYTHONPATH=$D/kall_python timeout 60 python3 $D/two_pass_err.py 2>&1 | grep -v Warn | tail -4 | tee "$OUT/two_pass_err.txt"
export POINTS='[[64,12,1024,64,true],[16,32,1024,64,true],[16,32,1024,64,false],[16,16,1024,128,false],
  [4,16,4096,128,false],[4,16,4096,128,true],[1,16,16384,128,false]]'
run() {   # run NAME TREE
  (cd "$T" && PYTHONPATH=$2 timeout 80 python3 short_fwd.py) 2>&1 | grep -v Warn > "/tmp/$1.txt"
  mv "$OUT/short_fwd.json" "$OUT/$1.json"
}
run qregs_1 "$D/qregs_python"; run main_1 "$PWD/python"; run qregs_2 "$D/qregs_python"
for n in qregs_1 main_1 qregs_2; do echo "== $n"; grep '^|' "/tmp/$n.txt"; done
