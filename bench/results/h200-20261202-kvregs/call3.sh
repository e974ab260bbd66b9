# Device call 3 of this folder (nvidia-h200), 2026-12-02, seventh part: the tree with K_REGS (dK/dV, one
# pass, up to d64) and Q_REGS (forward, 128-query tiles up to d64, 16-bit) as committed. (1) The Gluon
# forward's GPU tests that reach Q_REGS and the dK/dV kernel's (failures named); (2) issue 6's quick
# standing, 5 rounds, back to back (bench/kernels.py --quick).
#   bash bench/results/h200-20261202-kvregs/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 170 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py -q -p no:warnings -m gpu \
    -n 16 -rf -k "(matches_reference or short_causal or even_keys or windows or varlen or pingpong) and not fp8 \
    and not past_d128 and not dq" 2>&1 | grep -v "^\s*$" | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
timeout 260 python3 bench/kernels.py --quick --out "$OUT/kernels" --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --rounds 5 --autograd-threads off --time-budget 240 2>&1 | grep -v Warn | tail -2
rm -f "$OUT"/*/*.png "$OUT"/*/results.json
grep -B2 -A18 "## Targets\|## Forward: TFLOP\|## Forward + backward: TFLOP" "$OUT"/kernels/results.md | head -70
