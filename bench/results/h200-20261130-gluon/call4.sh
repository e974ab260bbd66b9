# Device call 4 of the 2026-11-30 Gluon part (nvidia-h200): the Gluon Hopper forward
# (forward_gluon.py) against the float64 reference, then timed against cuDNN / flash and against
# forward.py (variant nogluon) in the same run.
#   bash bench/results/h200-20261130-gluon/call4.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cudnn', torch.backends.cudnn.version())"
  git log -1 --format=%h 2>/dev/null; } | tee "$OUT/env.txt"
timeout 240 python3 -m pytest tests/test_gluon_forward.py -m gpu -q -x -p no:cacheprovider -n 8 > "$OUT/pytest.log" 2>&1
echo "gluon tests rc=$?"; tail -15 "$OUT/pytest.log"
timeout 300 python3 bench/kernels.py --quick --mode both --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --variant nogluon='{"fwd": {"GLUON": false}}' --variant s3='{"fwd": {"num_stages": 3}}' \
    --variant n64='{"fwd": {"BLOCK_N": 64}}' --rep 60 --time-budget 200 --out "$OUT/kernels" 2>&1 | tail -40
rm -f "$OUT"/kernels/*.png
