# Device call 8 of this folder (nvidia-h200), written 2026-12-03 (sixth session) for the next one, NOT RUN:
# FP8_DIAG_FIRST (new, off): causal fp8 calls in whole tiles stream each tile's diagonal block first,
# so the loop compiles no masked softmax (the sm90 compile's 40 bytes of spills at d128 causal go to
# 0, with LATE_SUM too), as 16-bit calls do (DIAG_FIRST, +2-3 % there).
# (1) GPU tests: the new test_gluon_fp8_forward_diagonal_first (against float64 and the emulation
#     walking the blocks last to first) and the fp8 forward's tests in the default schedule;
# (2) fp8 d128 and d64 causal S1k / S4k / S16k: the default against `fp8diag` and `fp8diaglate`
#     (with LATE_SUM, which lost on masked d128 calls through spills), 3 rounds, cuDNN and flash beside.
#   bash bench/results/h200-20261203-timeline/call8.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 14 -rf \
    -k "diagonal_first or (test_gluon_fp8_forward and defaults)" 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
timeout 300 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 64 --mode fwd --causal on \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8diag='{"fwd": {"FP8_DIAG_FIRST": true}}' \
    --variant fp8diaglate='{"fwd": {"FP8_DIAG_FIRST": true, "LATE_SUM": true}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -2
cp $W/fp8/results.md "$OUT/fp8.md"; grep -A10 "## Forward: TFLOP" "$OUT/fp8.md"; grep -A10 "relative error" "$OUT/fp8.md"
