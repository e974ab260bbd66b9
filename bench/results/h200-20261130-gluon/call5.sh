# Device call 5 of the 2026-11-30 Gluon part (nvidia-h200): the new defaults (Gluon forward where
# configs.gluon_wins) as a whole against cuDNN / flash, then a random sweep against the float64
# reference (the Gluon forward serves its plain calls).
#   bash bench/results/h200-20261130-gluon/call5.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 150 python3 bench/kernels.py --quick --mode both --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --variant nogluon='{"fwd": {"GLUON": false}}' --rep 60 --time-budget 90 --out "$OUT/kernels" 2>&1 | tail -34
rm -f "$OUT"/kernels/*.png
bash bench/h200.sh sweep 190 2>&1 | tail -12
