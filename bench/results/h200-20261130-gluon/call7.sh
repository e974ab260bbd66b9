# Device call 7 of the 2026-11-30 Gluon part (nvidia-h200): after the int64 fix of the Gluon
# forward's output rows (call 6: illegal address past 2^31 elements) and the new default
# (Gluon at head dims 65-128, d64 only from S16k): GPU tests, then the quick table.
#   bash bench/results/h200-20261130-gluon/call7.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 150 python3 -m pytest tests/test_gluon_forward.py -m gpu -q -p no:cacheprovider -n 8 > "$OUT/pytest.log" 2>&1
echo "gluon tests rc=$?"; tail -3 "$OUT/pytest.log"
timeout 60 python3 -m pytest tests/test_gpu_scale.py::test_past_2_31_elements -q -p no:cacheprovider 2>&1 | tail -2
timeout 150 python3 bench/kernels.py --quick --mode both --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --variant nogluon='{"fwd": {"GLUON": false}}' --rep 60 --time-budget 90 --out "$OUT/kernels" 2>&1 | tail -34
rm -f "$OUT"/kernels/*.png
