# Device call 1 of this folder (nvidia-h200), 2026-12-03: the eighth part's last default (causal d65-128
# calls from 4k keys: host-made descriptors, a persistent grid taking units from a counter) tested
# (its test and the GQA schedules' test, written then, never run); test_fp8's forward with its new
# emulation bound; issue 6's quick standing, 5 rounds, back to back.
#   bash bench/results/h200-20261203-standing/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 90 python3 -m pytest tests/test_gluon_backward.py tests/test_fp8.py -q -p no:warnings -m gpu -n 8 -rf \
    -k "counter_by_default or gqa_windows_and_schedules or test_forward" 2>&1 | grep -v "Warn\|warner" | tail -6 | tee "$OUT/tests.txt"
timeout 260 python3 bench/kernels.py --quick --out "$OUT/kernels" --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --rounds 5 --autograd-threads off --time-budget 240 2>&1 | grep -v Warn | tail -2
rm -f "$OUT"/*/*.png
grep -B2 -A18 "## Targets\|## Forward: TFLOP\|## Forward + backward: TFLOP" "$OUT"/kernels/results.md | head -70
