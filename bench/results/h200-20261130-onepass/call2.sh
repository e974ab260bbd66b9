#!/usr/bin/env bash
# Device call 2 (from the repo root on the H200): TMA on every kernel (the new sm90 default) and
# dq with 3 stages on dense calls. GPU tests of those paths first, then the kernel table with
# variants that isolate each change, cuDNN and flash in the same run.
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cudnn', torch.backends.cudnn.version())"; } | tee "$OUT/env.txt"
timeout 230 python3 -m pytest tests/test_fp8.py tests/test_gpu_scale.py tests/test_triton_kernels.py tests/test_features.py \
    -v -rf -n 6 -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/pytest.log" | tail -15
timeout 300 python3 bench/kernels.py --quick --mode both \
    --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant plain='{"fwd": {"TMA": false}, "bwd_dkdv": {"TMA": false}, "bwd_dq": {"TMA": false}}' \
    --variant f128='{"fwd": {"BLOCK_N": 128, "num_warps": 8}}' \
    --variant dkdv16='{"bwd_dkdv": {"BLOCK_M": 16, "BLOCK_N": 128, "num_warps": 8, "num_stages": 3}}' \
    --variant op16='{"bwd_dkdv": {"ONE_PASS": true, "BLOCK_M": 16, "BLOCK_N": 128, "num_warps": 8, "num_stages": 3}}' \
    --variant dq64='{"bwd_dq": {"BLOCK_N": 64}}' \
    --rep 60 --time-budget 220 --out "$OUT/kernels" 2>&1 | tail -42
