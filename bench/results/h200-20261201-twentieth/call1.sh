# Device call 1 of the twentieth part (nvidia-h200), at 180d1fd: the short forwards' GPU time with
# host time hidden (short_fwd.py), fa_ck's Gluon forward by default and with PINGPONG,
# PERSISTENT off, TMA_STORE off, 64-key blocks, beside SDPA cuDNN and flash.
#   bash bench/results/h200-20261201-twentieth/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 560 python3 bench/results/h200-20261201-twentieth/short_fwd.py \
  'pp={"fwd": {"PINGPONG": true}}' 'nopers={"fwd": {"PERSISTENT": false}}' \
  'nostore={"fwd": {"TMA_STORE": false}}' 'bn64={"fwd": {"BLOCK_N": 64}}' 2>&1 | grep -v Warn | tee "$OUT/short_fwd.txt" | tail -75
