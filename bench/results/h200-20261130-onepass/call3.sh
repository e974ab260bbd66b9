#!/usr/bin/env bash
# Device call 3 (from the repo root on the H200): the GPU test suites on the final defaults
# (TMA for d65-128 forward and dk/dv, dq 3 stages dense), then the kernel table with variants
# that separate TMA from the tile change, cuDNN and flash in the same run.
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cudnn', torch.backends.cudnn.version())"; } | tee "$OUT/env.txt"
timeout 280 python3 -m pytest tests/test_fp8.py tests/test_gpu_scale.py tests/test_triton_kernels.py tests/test_features.py \
    tests/test_api.py tests/test_properties.py tests/test_tuning.py -v -rf -n 6 -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/pytest.log" | tail -15
timeout 260 python3 bench/kernels.py --quick --mode both \
    --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant plain='{"fwd": {"TMA": false}, "bwd_dkdv": {"TMA": false}, "bwd_dq": {"TMA": false}}' \
    --variant dkdvnotma='{"bwd_dkdv": {"TMA": false, "BLOCK_M": 16, "BLOCK_N": 128, "num_warps": 8, "num_stages": 3}}' \
    --variant fwd64='{"fwd": {"BLOCK_N": 64}}' \
    --variant onepass='{"bwd_dkdv": {"ONE_PASS": true}}' \
    --rep 60 --time-budget 190 --out "$OUT/kernels" 2>&1 | tail -36
