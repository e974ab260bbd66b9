# Device call 2 of this folder (nvidia-h200), 2026-12-03 (seventh session): the final defaults
# (FP8_DIAG_FIRST on, LATE_SUM decided on the final tiles; TREE_* taken out) through
# (1) the GPU tests of the fp8 path, the host path and launches, and the Gluon forward's diagonal and
#     whole-block tests (its fp8 tests in the default schedule ran in call 1, on the same defaults);
# (2) nanoGPT 124M with sdpa and triton-fp8 (issue 7: within 0.05 of sdpa's final loss), 200 steps.
#   bash bench/results/h200-20261203-tree/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 300 python3 -m pytest tests/test_fp8.py tests/test_host_path.py tests/test_launch.py \
    tests/test_gluon_forward.py -q -p no:warnings -n 14 -rf \
    -k "not test_gluon_forward.py or diag or even" 2>&1 | grep -v "Warn\|warner" | tail -12 | tee "$OUT/tests.txt"
timeout 200 python3 bench/nanogpt.py --attn sdpa,triton-fp8 --steps 200 --batch 64 --block 1024 --time-budget 140 \
    --no-plots --out "$W/nanogpt" 2>&1 | grep -v Warn | tail -12 | tee "$OUT/nanogpt.txt"
cp $W/nanogpt/*.md $W/nanogpt/*.json "$OUT/" 2>/dev/null; ls "$OUT"
