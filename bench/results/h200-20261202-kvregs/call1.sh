# Device call 1 of this folder (nvidia-h200), 2026-12-02, seventh part: K (and V) of the Gluon dK/dV
# kernel as register operands up to d64 (backward_gluon._bwd_unit: S^T = K Q^T and dP^T = V dO^T were
# both-shared-memory wgmmas, whose A reads share shared memory's 128 B/cycle with every other operand).
# Trees: this one then (K in registers, no spills: k_regs_two_pass_too.patch over 86bf0e7), `kv_python/`
# (K and V: kv_regs.patch, 16 / 8 bytes of spills in two variants), `head_python/` (main at 86bf0e7),
# untracked copies made as below (not committed). First the Gluon dK/dV
# GPU tests on this tree (failures named), then the backward's GPU time with the host hidden
# (bwd_time.py), trees alternating in separate processes.
#   rm -rf /tmp/basepy && mkdir /tmp/basepy && git archive 86bf0e7 python | tar -x -C /tmp/basepy
#   cp -r /tmp/basepy/python/* bench/results/h200-20261202-kvregs/head_python/   (kv_python: the same with
#   kv_regs.patch applied; `python/` with k_regs_two_pass_too.patch)
#   bash bench/results/h200-20261202-kvregs/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-kvregs
B=$PWD/bench/results/h200-20261202-dkdv-store
timeout 230 python3 -m pytest tests/test_gluon_backward.py -q -p no:warnings -m gpu -n 16 -rf -k \
    "dkdv_matches_reference or dkdv_windows or persistent_takes or gqa_matches" 2>&1 | grep -v "^\s*$" \
    | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
export POINTS='[[64,12,1024,64,true],[32,32,512,64,true],[16,32,1024,64,true],[16,32,1024,64,false],
  [4,32,4096,64,true],[4,32,4096,64,false],[1,32,16384,64,true]]'
run() {   # run NAME TREE
  PYTHONPATH=$2 timeout 75 python3 $B/bwd_time.py 2>&1 | grep -v Warn > "/tmp/$1.txt"
  mv "$OUT/bwd_time.json" "$OUT/$1.json"
}
run kregs_1 "$PWD/python"; run main_1 "$D/head_python"; run kvregs_1 "$D/kv_python"; run kregs_2 "$PWD/python"
for n in kregs_1 main_1 kvregs_1 kregs_2; do echo "== $n"; grep '^|' "/tmp/$n.txt"; done
