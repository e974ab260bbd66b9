# Device call 2 of the 2026-11-30 sixth part (nvidia-h200): the Gluon backward with its second
# multiplies' operands staged through shared memory (dK/dV: STAGE_P, 64 queries per step at d128;
# dQ: STAGE_DS, 128 keys per block at d128) and dK/dV's multiplies started from -lse/scale and
# -delta: the Gluon backward GPU tests (both staging variants), then fwd+bwd timed alternately
# against the previous kernels (carried as .prev/backward_gluon_prev.py: the file at a8a79d5
# with the new switches accepted and ignored), SDPA cuDNN and flash (call2_stage.py).
#   bash bench/results/h200-20261130-sixth/call2.sh      (from the repo root; needs .prev/)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 240 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -rf -x -p no:cacheprovider -n 8 \
    > "$OUT/pytest.log" 2>&1
echo "gluon backward tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 330 python3 bench/results/h200-20261130-sixth/call2_stage.py 2>&1 | grep -v Warn | tee "$OUT/stage.txt"
