# Device call 6 of the 2026-11-30 seventh part (nvidia-h200): the new defaults (Gluon dK/dV with
# dQ added in it at head dims 65-128, and at d64 on masked calls from 4k keys; register
# operands): GPU tests through the API, a short random sweep, and the record table against SDPA
# cuDNN and flash (kernels.py, same run).
#   bash bench/results/h200-20261130-seventh/call6.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 170 python3 -m pytest tests/test_triton_kernels.py tests/test_api.py tests/test_gluon_backward.py -m gpu \
    -k "not large" -q -rf -p no:cacheprovider -n 8 > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 90 python3 bench/random_sweep.py --workers 12 --cases 3000 --time-budget 50 --out "$OUT/sweep" 2>&1 | tail -3
timeout 180 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 150 \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
