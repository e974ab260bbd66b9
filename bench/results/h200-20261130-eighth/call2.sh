# Device call 2 of the 2026-11-30 eighth part (nvidia-h200): call 1 found the persistent forward
# no faster than a program per tile (d128 S1024 0.72x cuDNN both). Where a tile's time goes:
# call2_timeline.py (clock64 marks per phase, per tile); the fp8 forward by parts
# (call2_fp8parts.py: fp8 was 0.30x cuDNN at S1024 in call 1); then 3-deep rings with and without
# persistence against SDPA cuDNN and flash (same run).
#   bash bench/results/h200-20261130-eighth/call2.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 200 python3 bench/results/h200-20261130-eighth/call2_timeline.py 2>&1 | tee "$OUT/timeline.txt" | tail -14
timeout 100 python3 bench/results/h200-20261130-eighth/call2_fp8parts.py 2>&1 | tee "$OUT/fp8parts.txt"
timeout 200 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 --mode fwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 150 --no-nanogpt \
    --variant pers='{"fwd": {"PERSISTENT": true}}' \
    --variant st3='{"fwd": {"num_stages": 3}}' \
    --variant pers3='{"fwd": {"PERSISTENT": true, "num_stages": 3}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
