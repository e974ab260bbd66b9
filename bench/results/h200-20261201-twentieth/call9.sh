# Device call 9 of the twentieth part (nvidia-h200), run 2026-12-01 in the twenty-second part:
# the GPU tests of the Gluon kernels on both/ (main + both patches; main's tests), which ran out
# of their 250 s in call 5.
#   (the trees as in call5.sh)
#   bash bench/results/h200-20261201-twentieth/call9.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
PYTHONPATH=$PWD/both/python timeout 540 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py \
    tests/test_triton_kernels.py -m "gpu and not bigmem" -q -p no:warnings -n 16 -rf 2>&1 \
    | grep -v "Warn\|warner" | grep -v "^\s*$" | tail -15 | tee "$OUT/tests.txt"
