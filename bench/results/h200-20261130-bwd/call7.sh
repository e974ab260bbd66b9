# Device call 7 of the 2026-11-30 backward part (nvidia-h200): the software-pipelined Gluon dK/dV
# kernel: the Gluon backward tests, then fwd+bwd timed alternately against its previous version
# (carried as .prev/backward_gluon_prev.py, the file at commit 69ef153), Triton's dK/dV, cuDNN and flash.
#   bash bench/results/h200-20261130-bwd/call7.sh      (from the repo root; needs .prev/)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 200 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -rf -p no:cacheprovider -n 8 \
    > "$OUT/pytest.log" 2>&1
echo "gluon backward tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 300 python3 bench/results/h200-20261130-bwd/call7_dkdv.py 2>&1 | grep -v Warn | tee "$OUT/dkdv.txt"
