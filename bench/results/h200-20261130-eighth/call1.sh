# Device call 1 of the 2026-11-30 eighth part (nvidia-h200): the persistent Gluon forward
# (PERSISTENT: one program per SM, heavy/light pairs of query blocks, the next tile's Q, K and V
# loaded under this one's tail). GPU tests of the Gluon forward in its three schedules (a
# program per tile, persistent, persistent on 3 programs), then forward speed against SDPA cuDNN
# and flash in the same run: pers = persistent; glpers = Gluon + persistent where forward.py is
# the default (d64 below 16k); fp8pers = the fp8 forward persistent (fa_ck-fp8 beside it).
#   bash bench/results/h200-20261130-eighth/call1.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 200 python3 -m pytest tests/test_gluon_forward.py -m gpu -q -rf -p no:cacheprovider -n 8 \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 290 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode fwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 3 --time-budget 240 \
    --variant pers='{"fwd": {"PERSISTENT": true}}' \
    --variant glpers='{"fwd": {"GLUON": true, "PERSISTENT": true}}' \
    --variant fp8pers='{"fwd": {"GLUON": true, "PERSISTENT": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
