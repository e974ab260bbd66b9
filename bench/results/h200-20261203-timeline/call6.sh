# Device call 6 of this folder (nvidia-h200), 2026-12-03 (sixth session), at the commit that adds it
# (the helper's unfinished edits replaced by snap/, as in call 5):
# LATE_SUM on 16-bit calls (off by default there): bf16 forward d64 S1k / S4k / S16k, full and
# causal, and nanoGPT's shape, the default against `late`, 3 rounds, SDPA cuDNN and flash beside;
# the Gluon forward's GPU tests in the new schedule "late-sum-persistent-3" (LATE_SUM asked for,
# three persistent programs), every test that takes a schedule (16-bit, fp8, staged P, windows...).
#   bash bench/results/h200-20261203-timeline/call6.sh      (from the repo root)
set -uo pipefail
S=bench/results/h200-20261203-timeline/snap
cp $S/plans.py $S/driver_launch.py $S/quantize.py $S/__init__.py python/fa_ck/backends/triton/
cp $S/test_host_path.py $S/test_fp8.py $S/test_launch.py tests/
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 230 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 14 -rf -k "late-sum" \
    2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
timeout 240 python3 bench/kernels.py --out "$W/bf16" --dtype bf16 --hdim 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --variant late='{"fwd": {"LATE_SUM": true}}' --rounds 3 --time-budget 120 2>&1 | grep -v Warn | tail -2
cp $W/bf16/results.md "$OUT/bf16.md"; grep -A12 "## Forward: TFLOP" "$OUT/bf16.md"; grep -A12 "relative error" "$OUT/bf16.md"
