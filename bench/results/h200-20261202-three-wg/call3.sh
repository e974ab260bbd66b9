# Device call 3 (nvidia-h200), 2026-12-02, third part: a consumer warpgroup whose 64 rows all lie past the
# sequence (a head's last tile) skips the tile, handing back Q and its blocks unread (not with PINGPONG;
# skip_past_rows.patch over b391ae4, the tree run; reverted after this call); this tree against the tree of call 2 (`head_python/`: this tree's python/ without the skip, an untracked copy,
# not committed), GPU time with the host hidden at d64 / d128 points of both tile heights; fwd+bwd at the
# long full d64 points, 192 by default against 128 asked, 5 rounds; the GPU tests the change touches.
#   bash bench/results/h200-20261202-three-wg/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-three-wg
T=$PWD/bench/results/h200-20261201-twentieth
export POINTS='[[16,32,1024,64,false],[8,32,2048,64,false],[4,32,4096,64,false],[16,32,1024,64,true],
  [64,12,1024,64,true],[4,16,4096,128,false],[16,16,1024,128,true],[32,8,520,64,false]]'
V=(bm128='{"fwd": {"BLOCK_M": 128}}' bm192='{"fwd": {"BLOCK_M": 192}}')
(cd "$T" && timeout 130 python3 short_fwd.py "${V[@]}") 2>&1 | grep -v Warn > "$OUT/short_fwd.txt"
mv "$OUT/short_fwd.json" "$OUT/short_fwd_this.json"
(cd "$T" && PYTHONPATH=$D/head_python timeout 130 python3 short_fwd.py "${V[@]}") 2>&1 | grep -v Warn \
    > "$OUT/short_fwd_head.txt"; mv "$OUT/short_fwd.json" "$OUT/short_fwd_head.json"
timeout 140 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 64 --causal off --mode fwdbwd \
    --seqlens 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --no-nanogpt \
    --autograd-threads off --time-budget 130 --variant 'bm128={"fwd": {"BLOCK_M": 128}}' 2>&1 | tail -2
rm -f "$OUT"/kernels/*.png
timeout 150 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf \
    -k "three_warpgroups or windows or varlen or (matches_reference and bfloat16)" 2>&1 | grep -v "^\s*$" \
    | tail -6 | tee "$OUT/tests.txt"
echo "== this tree"; grep '^|' "$OUT/short_fwd.txt"; echo "== call 2's tree"; grep '^|' "$OUT/short_fwd_head.txt"
grep -A8 "Forward + backward: TFLOP" "$OUT"/kernels/results.md
