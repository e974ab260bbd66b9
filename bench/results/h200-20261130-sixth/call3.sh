# Device call 3 of the 2026-11-30 sixth part (nvidia-h200): new dK/dV defaults (64 staged
# queries per step at d128) and the dQ kernel with Q and dO in registers (QDO_REGS): the Gluon
# backward GPU tests (both ways of each kernel), then fwd+bwd timed alternately (call3_qdo.py).
#   bash bench/results/h200-20261130-sixth/call3.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 240 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -rf -x -p no:cacheprovider -n 8 \
    > "$OUT/pytest.log" 2>&1
echo "gluon backward tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 300 python3 bench/results/h200-20261130-sixth/call3_qdo.py 2>&1 | grep -v Warn | tee "$OUT/qdo.txt"
