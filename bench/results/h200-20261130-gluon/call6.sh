# Device call 6 of the 2026-11-30 Gluon part (nvidia-h200): the GPU-only tests with the Gluon
# forward by default (one process each), and the short-sequence points timed alternately.
#   bash bench/results/h200-20261130-gluon/call6.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 150 python3 bench/results/h200-20261130-gluon/call6_short.py 2>&1 | tee "$OUT/short.txt"
for t in $(python3 -m pytest tests/test_gpu_scale.py tests/test_api.py -m gpu --collect-only -q -p no:cacheprovider 2>/dev/null | grep '::'); do
  timeout 200 python3 -m pytest "$t" -q -p no:cacheprovider >> "$OUT/pytest_gpu.log" 2>&1
  echo "$t rc=$?"
done | tee "$OUT/gpu_summary.txt"
