# Device call 3 of the 2026-11-30 ninth part (nvidia-h200): GPU tests of the Gluon dK/dV kernel
# restructured around a tile function, and of its persistent form (asked for: PERSISTENT, 3
# programs in the tests), of the Gluon forward defaults and fp8; then forward and
# forward+backward at d128/d64 against SDPA cuDNN and flash in the same run, with
# bwdpers = the persistent dK/dV kernel.
#   bash bench/results/h200-20261130-ninth/call3.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 220 python3 -m pytest tests/test_gluon_backward.py tests/test_gluon_forward.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "test_gluon_backward or (test_gluon_forward and defaults)" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -10
timeout 300 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 270 \
    --variant bwdpers='{"bwd_dkdv": {"PERSISTENT": true, "HOST_DESC": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
