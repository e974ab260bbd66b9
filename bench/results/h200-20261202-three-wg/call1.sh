# Device call 1 (nvidia-h200), 2026-12-02, third part: the Gluon forward with 192 queries per tile (three
# consumer warpgroups, BLOCK_M 192, asked for; FlashAttention-3's d64 tile) against the default 128, bf16
# d64, GPU time with the host hidden (the twentieth part's short_fwd.py), beside SDPA cuDNN and flash;
# then the GPU tests of the three-warpgroup forward in every schedule.
#   bash bench/results/h200-20261202-three-wg/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
T=$PWD/bench/results/h200-20261201-twentieth
export POINTS='[[32,32,512,64,false],[32,32,512,64,true],[16,32,1024,64,false],[16,32,1024,64,true],
  [64,12,1024,64,true],[4,32,4096,64,false],[4,32,4096,64,true],[1,32,16384,64,false],[1,32,16384,64,true]]'
(cd "$T" && timeout 230 python3 short_fwd.py bm192='{"fwd": {"BLOCK_M": 192}}' \
    bm192s3='{"fwd": {"BLOCK_M": 192, "num_stages": 3}}') 2>&1 | grep -v Warn > "$OUT/short_fwd.txt"
timeout 300 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -x \
    -k "three_warpgroups or (matches_reference and defaults and shape2)" 2>&1 | tail -4 | tee "$OUT/tests.txt"
grep '^|' "$OUT/short_fwd.txt"
