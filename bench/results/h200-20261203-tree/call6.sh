# Device call 6 of this folder (nvidia-h200), written 2026-12-03 (seventh session) for the next one,
# NOT RUN (the device budget was spent): the Gluon kernels' GPU tests after forward_gluon_loads.py and
# backward_gluon_loads.py were split out of forward_gluon.py and backward_gluon.py (the sm90 SASS of
# 4 forward and 34 dK/dV rows had the same instructions before and after, but no GPU ran them), and
# the fp8 forward's standing beside cuDNN.
#   bash bench/results/h200-20261203-tree/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 420 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py -q -p no:warnings -n 14 -rf \
    -k "(test_gluon_forward.py and defaults) or (test_gluon_dkdv_matches_reference and (dynamic or registers)) or last_heads or persistent_takes or counter_by_default or replays" 2>&1 | grep -v "Warn\|warner" | tail -10 | tee "$OUT/tests.txt"
timeout 150 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 4096 16384 --backends fa_ck-fp8 fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --no-nanogpt 2>&1 \
    | grep -v Warn | tail -2
cp $W/fp8/results.md "$OUT/fp8.md"; grep -A8 "## Forward: TFLOP" "$OUT/fp8.md"
