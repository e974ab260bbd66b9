# Device call 5 of this folder (nvidia-h200), 2026-12-03 (sixth session), at the commit that adds it
# (the helper's unfinished edits of plans.py, driver_launch.py, quantize.py, __init__.py and the
# tests replaced by snap/: the commit's own versions, LATE_SUM on by default):
# (1) the Gluon fp8 forward's GPU tests with P in registers (every schedule), bit for bit under
#     Q_CONVERT, P in registers at other blocks and windows;
# (2) fp8 forward d128 and d64, S1k / S4k / S16k: LATE_SUM (default) against `fp8early` (off), 3 rounds.
#   bash bench/results/h200-20261203-timeline/call5.sh      (from the repo root)
set -uo pipefail
S=bench/results/h200-20261203-timeline/snap
cp $S/plans.py $S/driver_launch.py $S/quantize.py $S/__init__.py python/fa_ck/backends/triton/
cp $S/test_host_path.py $S/test_fp8.py $S/test_launch.py tests/
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 260 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 14 -rf -k \
    "(test_gluon_fp8_forward and (True-False or True-True)) or bit_for_bit or p_in_registers or fp8_forward_raw_max or fp8_forward_negative or makes_no_q8 or fp8_calls_the_gluon" \
    2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
timeout 200 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8early='{"fwd": {"LATE_SUM": false}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -2
cp $W/fp8/results.md "$OUT/fp8.md"; grep -A16 "## Forward: TFLOP" "$OUT/fp8.md"; grep -A16 "relative error" "$OUT/fp8.md"
