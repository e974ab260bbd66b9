# Device call 1 of this folder (nvidia-h200), 2026-12-03 (seventh session):
# TREE_MAX / TREE_SUM (new, off): each row's max and sum of a key block in log2 steps of independent
# instructions, not the reduction's chain of N/4 dependent ones per row (forward_gluon._per_row).
# (1) GPU tests: the Gluon forward's tests in the new schedule `tree-rows` and the fp8 forward's in the
#     default one (FP8_DIAG_FIRST now on: the emulation walks the blocks as launched);
# (2) fp8 d128 and d64, full and causal, S1k / S4k / S16k: default against fp8tmax (TREE_MAX) and fp8tree
#     (both), 3 rounds, cuDNN and flash beside;
# (3) bf16 the same points: default against tmax and tree.
#   bash bench/results/h200-20261203-tree/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 220 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 14 -rf \
    -k "tree-rows or (test_gluon_fp8_forward and defaults)" 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
timeout 200 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8tmax='{"fwd": {"TREE_MAX": true}}' \
    --variant fp8tree='{"fwd": {"TREE_MAX": true, "TREE_SUM": true}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -2
timeout 160 python3 bench/kernels.py --out "$W/bf16" --dtype bf16 --hdim 128 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn \
    --variant tmax='{"fwd": {"TREE_MAX": true}}' \
    --variant tree='{"fwd": {"TREE_MAX": true, "TREE_SUM": true}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -2
for r in fp8 bf16; do cp $W/$r/results.md "$OUT/$r.md"; cp $W/$r/results.json "$OUT/$r.json"; grep -A16 "## Forward: TFLOP" "$OUT/$r.md"; done
grep -A16 "relative error" "$OUT/fp8.md"
