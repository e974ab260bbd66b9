# Device call 2 of this folder (nvidia-h200), 2026-12-03 (second session): GPU tests of this session's
# changes. (1) test_gluon_backward.py whole (the counter now the default on causal d65-128 calls from 2k
# keys; its test has a 2048-key case now) and test_gpu_scale.py (large shapes through the new default);
# (2) test_fp8.py whole, without `-m gpu` (its tests carry no gpu mark, so h200-20261203-standing call 1's
# `-m gpu` left them out): the emulation now gives each output element its slack for P values near an fp8
# rounding edge; then the fp8 / persistent / counter tests of test_gluon_forward.py and test_triton_kernels.py.
#   bash bench/results/h200-20261203-threshold/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 330 python3 -m pytest tests/test_gluon_backward.py tests/test_gpu_scale.py -m "gpu and not bigmem" -q \
    -p no:warnings -n 12 -rf 2>&1 | grep -v "Warn\|warner" > "$OUT/tests_backward.txt"
tail -c 1500 "$OUT/tests_backward.txt"
timeout 150 python3 -m pytest tests/test_fp8.py -q -p no:warnings -n 12 -rf 2>&1 \
    | grep -v "Warn\|warner" > "$OUT/tests_fp8.txt"          # (the whole file: its tests carry no gpu mark)
timeout 100 python3 -m pytest tests/test_gluon_forward.py tests/test_triton_kernels.py -m "gpu and not bigmem" \
    -k "fp8 or emulat or persistent or dynamic or counter" -q -p no:warnings -n 12 -rf 2>&1 \
    | grep -v "Warn\|warner" >> "$OUT/tests_fp8.txt"
tail -c 1500 "$OUT/tests_fp8.txt"
