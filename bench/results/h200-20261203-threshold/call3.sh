# Device call 3 of this folder (nvidia-h200), 2026-12-03 (second session). (1) The fp8 tests of
# test_gluon_forward.py (among them test_gluon_fp8_forward, which reads the fp8 emulation changed this
# session): call 2's last pytest ran out of its time limit half-way. (2) The quick standing at the new
# default (the counter on causal d65-128 calls from 2k keys): bench/kernels.py --quick, 5 rounds,
# with SDPA cuDNN and flash.
#   bash bench/results/h200-20261203-threshold/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_gluon_forward.py -m "gpu and not bigmem" -k "fp8" -q -p no:warnings -n 12 \
    -rf 2>&1 | grep -v "Warn\|warner" | tail -6 | tee "$OUT/tests.txt"
timeout 270 python3 bench/kernels.py --quick --out "$OUT/kernels" --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --rounds 5 --autograd-threads off --time-budget 250 2>&1 | grep -v Warn | tail -2
rm -f "$OUT"/*/*.png
grep -B2 -A18 "## Targets\|## Forward: TFLOP\|## Forward + backward: TFLOP" "$OUT"/kernels/results.md | head -70
