# Device call 4 of the 2026-11-30 sixth part (nvidia-h200): after launch.py (direct launches of
# compiled kernels), remembered configurations and a reused TMA scratch buffer: the GPU tests of
# every kernel path, then host time and short-sequence speed with and without those savings,
# alternated in one process (call4_host.py).
#   bash bench/results/h200-20261130-sixth/call4.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 330 python3 -m pytest tests/test_launch.py tests/test_api.py tests/test_features.py tests/test_fp8.py \
    tests/test_gluon_forward.py tests/test_gluon_backward.py tests/test_triton_kernels.py -q -rf \
    -p no:cacheprovider -n 12 > "$OUT/pytest.log" 2>&1
echo "gpu tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 200 python3 bench/results/h200-20261130-sixth/call4_host.py 2>&1 | grep -v Warn | tee "$OUT/host.txt"
