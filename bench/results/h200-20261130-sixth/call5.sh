# Device call 5 of the 2026-11-30 sixth part (nvidia-h200): call 4's four out-of-memory failures
# (test_gpu_large, run 12 at a time beside other processes) run alone; host time and short
# speed with and without the host-side savings (call4_host.py, its harness fixed); the record
# table (kernels.py, bf16, same run against SDPA cuDNN and flash); a random sweep.
#   bash bench/results/h200-20261130-sixth/call5.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 100 python3 -m pytest tests/test_triton_kernels.py -k test_gpu_large -q -rf -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "test_gpu_large rc=$?"; grep -E "FAILED|passed|failed" "$OUT/pytest.log" | tail -6
timeout 150 python3 bench/results/h200-20261130-sixth/call4_host.py 2>&1 | grep -v Warn | tee "$OUT/host.txt"
timeout 220 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 170 \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
timeout 100 python3 bench/random_sweep.py --workers 12 --cases 3000 --time-budget 70 --out "$OUT/sweep" 2>&1 | tail -4
