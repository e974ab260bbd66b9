# Device call 4 of the 2026-11-30 third part (nvidia-h200): the final code. Call 2's four failed
# sweep cases in their own processes; the quick kernel table against cuDNN/flash; a short sweep.
#   bash bench/results/h200-20261130-final/call4.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
for c in 1-9 12-58 14-30 22-32; do
  CUDA_LAUNCH_BLOCKING=1 timeout 60 python3 bench/results/h200-20261130-final/call4_repro.py $c 2>&1 | tail -1
done | tee "$OUT/repro.txt"
timeout 120 python3 bench/kernels.py --quick --mode both --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --rep 60 --time-budget 80 --out "$OUT/kernels" 2>&1 | tail -32
rm -f "$OUT"/kernels/*.png
bash bench/h200.sh sweep 140 2>&1 | tail -12
