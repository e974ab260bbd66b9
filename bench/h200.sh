#!/usr/bin/env bash
# One device call on the lent H200: GPU tests, then the kernel sweep against SDPA (cuDNN, flash)
# in the same run. Everything lands in $OUT (at most 8 files come back).
#   bash bench/h200.sh [tests|kernels|sweep|all] [extra args for bench/kernels.py]
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
what=${1:-all}; shift || true
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
if [[ $what == tests || $what == all ]]; then
  # small shapes in parallel (compiles dominate), then the large GPU-only shapes one at a time
  timeout 300 python3 -m pytest tests/test_triton_kernels.py tests/test_features.py tests/test_api.py \
      tests/test_properties.py -q -n 12 -m "not gpu" -p no:cacheprovider > "$OUT/pytest.log" 2>&1
  echo "small-shape tests rc=$?"; tail -4 "$OUT/pytest.log"
  timeout 300 python3 -m pytest tests/test_triton_kernels.py tests/test_gpu_scale.py -q -m gpu -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
  echo "gpu tests rc=$?"; tail -4 "$OUT/pytest_gpu.log"
fi
if [[ $what == sweep ]]; then
  python3 bench/random_sweep.py --cases 3000 --time-budget 420 --out "$OUT/sweep"
fi
if [[ $what == kernels || $what == all ]]; then
  python3 bench/kernels.py --out "$OUT/kernels" "$@"
fi
