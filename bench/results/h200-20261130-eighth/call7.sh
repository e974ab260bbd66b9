# Device call 7 of the 2026-11-30 eighth part (nvidia-h200), the last minutes of device time: the
# final forward defaults (persistent, host-made descriptors, out by TMA stores at head dims
# 65-128 where shared memory holds it; descriptors made without TensorDescriptor's checks): the
# Gluon forward GPU tests in the default and TMA-store schedules and the fp8 tests; then the d128
# forward against SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-eighth/call7.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 110 python3 -m pytest tests/test_gluon_forward.py tests/test_fp8.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "defaults or tma-store or fp8" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 100 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 --mode fwd --no-nanogpt \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 80 \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
