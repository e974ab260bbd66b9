# Device call 2 of this folder (nvidia-h200), 2026-12-03: the rest of the GPU suite (everything marked gpu
# but bigmem, without the two files the eighth part's calls 7-8 ran), pytest's last lines kept whole.
#   bash bench/results/h200-20261203-standing/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 480 python3 -m pytest tests -m "gpu and not bigmem" --ignore tests/test_gluon_backward.py \
    --ignore tests/test_triton_kernels.py -q -p no:warnings -n 12 -rf 2>&1 | grep -v "Warn\|warner" > "$OUT/tests.txt"
tail -c 3000 "$OUT/tests.txt"
