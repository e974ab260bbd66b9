# Device call 6 of the 2026-11-30 eighth part (nvidia-h200): the new forward defaults
# (persistent Gluon forward with host-made descriptors; TMA stores of out on request): GPU tests
# of the Gluon forward in six schedules and of fp8; then the record table, forward and
# forward+backward, against SDPA cuDNN and flash in the same run, with pertile = a program per
# tile (call 5's default) and tmastore = out by TMA stores.
#   bash bench/results/h200-20261130-eighth/call6.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 210 python3 -m pytest tests/test_gluon_forward.py tests/test_fp8.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 290 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 270 \
    --variant pertile='{"fwd": {"PERSISTENT": false}}' \
    --variant tmastore='{"fwd": {"TMA_STORE": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
