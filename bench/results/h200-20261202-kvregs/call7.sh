# Device call 7 of this folder (nvidia-h200), 2026-12-02, eighth part: the tree with LSE_PREP on by
# default up to d128 (configs.switches, after call 5). (1) The dK/dV kernel's GPU tests and the Triton
# kernels' (failures named); (2) LSE_PREP past d128 and at d96, backward GPU time with the host hidden
# (`prep` asks for it, `noprep` for lse itself); (3) issue 6's quick standing, 5 rounds, back to back.
#   bash bench/results/h200-20261202-kvregs/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
B=$PWD/bench/results/h200-20261202-dkdv-store
timeout 150 python3 -m pytest tests/test_gluon_backward.py tests/test_triton_kernels.py -q -p no:warnings -m gpu \
    -n 16 -rf -k "not dq_ and not past_d128 and not fp8" \
    2>&1 | grep -v "^\s*$" | grep -v "Warn\|warner" | grep -v "^\.*\s*\[" | tail -10 | tee "$OUT/tests.txt"
export POINTS='[[16,16,1024,96,false],[4,16,4096,96,true],[16,8,1024,256,false],[16,8,1024,256,true],
  [4,8,4096,256,false],[16,8,1024,192,true]]'
timeout 80 python3 $B/bwd_time.py prep='{"bwd_dkdv": {"LSE_PREP": true}}' noprep='{"bwd_dkdv": {"LSE_PREP": false}}' \
    2>&1 | grep -v Warn > "$OUT/bwd_time.txt"
timeout 250 python3 bench/kernels.py --quick --out "$OUT/kernels" --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --rounds 5 --autograd-threads off --time-budget 230 2>&1 | grep -v Warn | tail -2
rm -f "$OUT"/*/*.png "$OUT"/*/results.json
grep '^|' "$OUT/bwd_time.txt"
grep -B2 -A18 "## Targets\|## Forward: TFLOP\|## Forward + backward: TFLOP" "$OUT"/kernels/results.md | head -70
