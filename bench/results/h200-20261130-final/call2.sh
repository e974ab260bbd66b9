# Device call 2 of the 2026-11-30 third part (nvidia-h200-x2): the two-GPU test, the new d128
# backward tiles against the previous ones, call 4's failed sweep cases under both criteria, beside
# the random sweep at the final code (24 workers, 2 GPUs).
#   bash bench/results/h200-20261130-final/call2.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 120 python3 -m pytest tests/test_gpu_scale.py -k "not_current" -v -rs -p no:cacheprovider > "$OUT/pytest_2gpu.log" 2>&1
echo "2-GPU test rc=$?"; grep -E "passed|failed|skipped|Error" "$OUT/pytest_2gpu.log" | tail -5
# d128 fwd+bwd with the new defaults (dk/dv 32x128, dq 128x64 at d65-128 on sm90) against the
# previous ones (prev) and cuDNN/flash, on GPU 0 alone before the sweep
timeout 100 python3 bench/kernels.py --hdim 128 --seqlens 1024 4096 16384 --dtype bf16 --mode fwdbwd --no-nanogpt \
    --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --variant prev='{"bwd_dkdv": {"BLOCK_M": 16}, "bwd_dq": {"BLOCK_N": 32}}' \
    --rep 60 --time-budget 60 --out "$OUT/kernels" 2>&1 | tail -12
rm -f "$OUT"/kernels/*.png               # at most 8 files come back
# the recheck runs beside the sweep (a 25th process; 32 CPU cores)
timeout 300 python3 bench/results/h200-20261130-final/call2_recheck.py > "$OUT/recheck.txt" 2>&1 &
bash bench/h200.sh sweep 380 2>&1 | tail -25
wait; cat "$OUT/recheck.txt"
