#!/usr/bin/env bash
# Device call 1 of the session's second half (run from the repo root on the H200):
# GPU tests of fp8 and of the new default paths (lazy rescale, one-pass backward), then the
# kernel table with the variants that isolate each change, cuDNN and flash in the same run.
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cudnn', torch.backends.cudnn.version())"
  git log -1 --format='code %h %s' 2>/dev/null; } | tee "$OUT/env.txt"
timeout 200 python3 -m pytest tests/test_fp8.py tests/test_gpu_scale.py tests/test_triton_kernels.py \
    -k "gpu or fp8 or varlen or paths or one_pass or lazy or features_large or 2_31 or autocast or graph" \
    -v -rf -n 8 -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "passed|failed|FAILED|ERROR" "$OUT/pytest.log" | tail -15
timeout 340 python3 bench/kernels.py --quick --mode both \
    --backends fa_ck-triton fa_ck-triton-det fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant eager='{"fwd": {"LAZY_RESCALE": false}}' \
    --variant op16x128='{"bwd_dkdv": {"BLOCK_M": 16, "BLOCK_N": 128, "num_warps": 8, "num_stages": 2}}' \
    --variant dq3='{"bwd_dkdv": {"ONE_PASS": false}, "bwd_dq": {"num_stages": 3}}' \
    --rep 60 --time-budget 250 --out "$OUT/kernels" 2>&1 | tail -45
