# Device call 7 of the 2026-11-30 seventh part (nvidia-h200): the Gluon backward tests after
# call 6 (the dQ-kernel tests now ask for two passes, since at d128 the dK/dV kernel adds dQ
# itself by default and call 6 found their dQ kernel not launched).
#   bash bench/results/h200-20261130-seventh/call7.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
date -u | tee "$OUT/env.txt"
timeout 170 python3 -m pytest tests/test_gluon_backward.py -q -rf -p no:cacheprovider -n 8 > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
