# Device call 1 of the 2026-11-30 third part (nvidia-h200): the final defaults measured as a
# whole against cuDNN/flash in one run, three more tile variants, then the GPU test suite.
#   bash bench/results/h200-20261130-final/call1.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; git rev-parse HEAD 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cudnn', torch.backends.cudnn.version())"; } | tee "$OUT/env.txt"
timeout 270 python3 bench/kernels.py --quick --mode both \
    --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant dq64='{"bwd_dq": {"BLOCK_N": 64}}' \
    --variant dkdv32='{"bwd_dkdv": {"BLOCK_M": 32}}' \
    --variant fwds2='{"fwd": {"num_stages": 2}}' \
    --rep 60 --time-budget 200 --out "$OUT/kernels" 2>&1 | tail -40
timeout 270 python3 -m pytest tests/test_fp8.py tests/test_gpu_scale.py tests/test_triton_kernels.py tests/test_features.py \
    tests/test_api.py tests/test_properties.py tests/test_tuning.py -v -rf -n 6 -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/pytest.log" | tail -15
