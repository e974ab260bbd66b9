# Device call 9 of the 2026-11-30 backward part (nvidia-h200): the fp8 forward in Gluon (FP8
# switch of forward_gluon.py, on request) on its first run: its GPU tests, the bf16 Gluon forward
# tests (same kernel body), then forward speed and error against fp8 forward.py, cuDNN and flash.
#   bash bench/results/h200-20261130-bwd/call9.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 130 python3 -m pytest tests/test_gluon_forward.py -m gpu -q -rf -x -p no:cacheprovider -n 8 \
    > "$OUT/pytest.log" 2>&1
echo "gluon forward tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 110 python3 bench/results/h200-20261130-bwd/call9_fp8.py 2>&1 | grep -v Warn | tee "$OUT/fp8.txt"
