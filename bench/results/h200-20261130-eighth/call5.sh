# Device call 5 of the 2026-11-30 eighth part (nvidia-h200): call 2's timeline put 2-3 us per
# tile into building q, k, v's TMA descriptors on the device. Now (HOST_DESC, default for
# non-varlen calls) they are made on the host as 4-D descriptors over (batch, heads, rows,
# head_dim). GPU tests of the Gluon forward in five schedules; then forward speed against SDPA
# cuDNN and flash (same run): the new default (a program per tile, host descriptors), pers =
# persistent, devdesc = descriptors on the device as before, glpers = Gluon + persistent where
# forward.py is the default (d64 below 16k), fa_ck-fp8 and fp8pers (its Gluon kernel persistent).
# (call 3 ran this script on 7dfbe61: wrong outputs, 12 of 15 tests failed; call 4 found the 4-D
# descriptor load right and the cause in the kernel: the ring streamer took BLOCK_N from the
# descriptor block, 1 for a 4-D one; and the HOST_DESC override never reached the config.)
#   bash bench/results/h200-20261130-eighth/call5.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 240 python3 -m pytest tests/test_gluon_forward.py -m gpu -q -rf -p no:cacheprovider -n 12 -x \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 300 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode fwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 3 --time-budget 250 \
    --variant pers='{"fwd": {"PERSISTENT": true}}' \
    --variant devdesc='{"fwd": {"HOST_DESC": false}}' \
    --variant glpers='{"fwd": {"GLUON": true, "PERSISTENT": true}}' \
    --variant fp8pers='{"fwd": {"GLUON": true, "PERSISTENT": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
