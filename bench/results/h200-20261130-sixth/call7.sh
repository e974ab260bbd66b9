# Device call 7 of the 2026-11-30 sixth part (nvidia-h200): the GPU tests after the last host-side
# changes (launch key, poisoning read once, placeholders), then ring depths of the Gluon kernels
# timed alternately (call7_rings.py).
#   bash bench/results/h200-20261130-sixth/call7.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 150 python3 -m pytest tests/test_launch.py tests/test_api.py tests/test_fp8.py tests/test_gluon_backward.py \
    -q -rf -p no:cacheprovider -n 8 > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 110 python3 bench/results/h200-20261130-sixth/call7_rings.py 2>&1 | grep -v Warn | tee "$OUT/rings.txt"
