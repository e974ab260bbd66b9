# Device call 2 (nvidia-h200), 2026-12-02, third part: 192 queries per tile by default on long full d64
# calls (configs.fwd_gluon_three_warpgroups: 16-bit head dims 33-64, no mask, not varlen, >= 2048
# queries and keys). GPU time of the d64 full forwards from S2048 (the rule's edge) to S16k, the
# default against 128 queries asked (`bm128`); bench/kernels.py fwd and fwd+bwd at d64 full, same
# variant, autograd's multithreading off; then the GPU tests of the three-warpgroup forward.
#   bash bench/results/h200-20261202-three-wg/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
T=$PWD/bench/results/h200-20261201-twentieth
export POINTS='[[8,32,2048,64,false],[4,32,4096,64,false],[2,32,8192,64,false],[1,32,16384,64,false]]'
(cd "$T" && timeout 120 python3 short_fwd.py bm128='{"fwd": {"BLOCK_M": 128}}') 2>&1 | grep -v Warn \
    > "$OUT/short_fwd.txt"
timeout 200 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 --causal off --mode both \
    --seqlens 2048 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --no-nanogpt \
    --autograd-threads off --time-budget 180 --variant 'bm128={"fwd": {"BLOCK_M": 128}}' 2>&1 | tail -3
rm -f "$OUT"/kernels/*.png
timeout 230 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf \
    -k "three_warpgroups or (matches_reference and shape2)" 2>&1 | grep -v "^\s*$" | tail -6 | tee "$OUT/tests.txt"
grep '^|' "$OUT/short_fwd.txt"; cat "$OUT"/kernels/*.md 2>/dev/null | grep -v "^$" | head -40
