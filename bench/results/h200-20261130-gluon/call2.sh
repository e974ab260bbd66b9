# Device call 2 of the 2026-11-30 Gluon part (nvidia-h200): Gluon forward tiles (one warpgroup
# per program, several programs per SM) against the default and forward.py; ncu stall reasons.
#   bash bench/results/h200-20261130-gluon/call2.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
D=bench/results/h200-20261130-gluon
timeout 200 python3 bench/kernels.py --quick --mode fwd --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --variant nogluon='{"fwd": {"GLUON": false}}' --variant m64n64='{"fwd": {"BLOCK_M": 64, "num_warps": 4, "BLOCK_N": 64}}' \
    --variant m64='{"fwd": {"BLOCK_M": 64, "num_warps": 4}}' \
    --variant m64n64s3='{"fwd": {"BLOCK_M": 64, "num_warps": 4, "BLOCK_N": 64, "num_stages": 3}}' \
    --rep 60 --time-budget 120 --out "$OUT/kernels" 2>&1 | tail -18
rm -f "$OUT"/kernels/*.png
if command -v ncu > /dev/null; then
  for cfg in '{}' '{"fwd": {"GLUON": false}}' '{"fwd": {"BLOCK_M": 64, "num_warps": 4, "BLOCK_N": 64}}'; do
    echo "== ncu $cfg"
    FA_CK_TRITON_CONFIG="$cfg" timeout 120 ncu --launch-skip 2 --launch-count 1 -k regex:fwd \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats \
      python3 $D/call2_one.py 2>&1 | grep -v "^==PROF==" | grep -E "Duration|Throughput|Stall|Warp Cycles|Issued|Eligible|Active Warps|Occupancy|Registers|Shared Memory Config|Block Limit|No Eligible|One or More" | head -40
  done | tee "$OUT/ncu.txt"
else
  echo "no ncu"
fi
