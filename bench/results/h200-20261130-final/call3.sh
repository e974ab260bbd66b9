# Device call 3 of the 2026-11-30 third part (nvidia-h200): call 2's misaligned-address sweep
# cases, one process per (case, variant) under CUDA_LAUNCH_BLOCKING=1; the quick kernel table of
# the final code against cuDNN/flash (fp8 beside it); then the GPU test suite.
#   bash bench/results/h200-20261130-final/call3.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cudnn', torch.backends.cudnn.version())"; } | tee "$OUT/env.txt"
R=bench/results/h200-20261130-final/call3_repro.py
for c in 1-9 12-58; do
  for v in '' '{"fwd": {"TMA": false}}' '{"bwd_dkdv": {"BLOCK_M": 16}}' '{"bwd_dq": {"BLOCK_N": 32}}'; do
    FA_CK_TRITON_CONFIG="$v" CUDA_LAUNCH_BLOCKING=1 timeout 60 python3 $R $c 2>&1 | tail -1
  done
done | tee "$OUT/repro.txt"
timeout 170 python3 bench/kernels.py --quick --mode both --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --rep 60 --time-budget 120 --out "$OUT/kernels" 2>&1 | tail -34
rm -f "$OUT"/kernels/*.png
timeout 280 python3 -m pytest tests/test_fp8.py tests/test_gpu_scale.py tests/test_triton_kernels.py tests/test_features.py \
    tests/test_api.py tests/test_properties.py tests/test_tuning.py tests/test_random_sweep.py -v -rf -n 6 \
    -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/pytest.log" | tail -15
