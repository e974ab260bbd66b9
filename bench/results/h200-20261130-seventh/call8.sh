# Device call 8 of the 2026-11-30 seventh part (nvidia-h200): the dK/dV kernel at head dim 16
# (BLOCK_D 16: each warpgroup's dQ half is 8 columns, a slice inside K's 32-byte swizzle), every
# way of feeding it, against the float64 reference.
#   bash bench/results/h200-20261130-seventh/call8.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
date -u | tee "$OUT/env.txt"
timeout 120 python3 -m pytest tests/test_gluon_backward.py -k "test_gluon_dkdv_matches_reference and shape7" \
    -q -rf -p no:cacheprovider -n 8 > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
