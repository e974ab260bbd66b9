# Device call 3 of this folder (nvidia-h200), 2026-12-03 (eighth session): EXP_TURNS (new, off): the two
# consumer warpgroups take turns at the exponentials (named barriers 8 and 9, bar.sync / bar.arrive
# across 256 threads). Call 2's stall samples: the fp8 loop's MUFU.EX2 sit in runs at the end of each
# softmax, stalled on the MUFU's throughput (`wait`), while the two warpgroups' softmaxes overlap; in
# turns each warpgroup's exponentials would have the MUFU to themselves. The row max reaches the
# exponentials through shared memory read after the wait, the row sum is stored before the signal, so
# ptxas keeps every MUFU between the two (it had moved them out). Row sums in their block (no LATE_SUM).
# (1) GPU tests of the Gluon forward in a new schedule `exp-turns-persistent-3`;
# (2) fp8 d128 / d64 full / causal S1k-16k: default, fp8nolate (LATE_SUM off), fp8turns, 3 rounds;
# (3) bf16 the same points: default against turns.
#   bash bench/results/h200-20261203-rescale/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 170 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 14 -rf -x \
    -k "exp-turns" 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
timeout 190 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8nolate='{"fwd": {"LATE_SUM": false}}' \
    --variant fp8turns='{"fwd": {"EXP_TURNS": true, "LATE_SUM": false}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -2
timeout 130 python3 bench/kernels.py --out "$W/bf16" --dtype bf16 --hdim 128 64 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn \
    --variant turns='{"fwd": {"EXP_TURNS": true}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -2
for r in fp8 bf16; do cp $W/$r/results.md "$OUT/$r.md"; cp $W/$r/results.json "$OUT/$r.json"; grep -A16 "## Forward: TFLOP" "$OUT/$r.md"; done
grep -A16 "relative error" "$OUT/fp8.md"
