# Device call 2 of the 2026-11-30 ninth part (nvidia-h200): GPU tests of the new defaults (the
# dK/dV kernel on host-made descriptors at d64 and d128 full; fp8's padded keys-contiguous v);
# the fp8 forward's kernels by profiler (call2_fp8prof.py); a closer look at call 1's points
# (5 rounds) with nobwdhost / bwdhost = HOST_DESC off / on everywhere, glfwd = the Gluon forward
# at d64 below 16k keys; then nanoGPT training with sdpa, triton and triton-fp8.
#   bash bench/results/h200-20261130-ninth/call2.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 150 python3 -m pytest tests/test_gluon_backward.py tests/test_gluon_forward.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "test_gluon_backward or (test_gluon_forward and defaults)" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 60 python3 bench/results/h200-20261130-ninth/call2_fp8prof.py 2>&1 | grep -v Warn | tee "$OUT/fp8prof.txt"
timeout 150 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode both \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 130 \
    --variant nobwdhost='{"bwd_dkdv": {"HOST_DESC": false}}' \
    --variant bwdhost='{"bwd_dkdv": {"HOST_DESC": true}}' \
    --variant glfwd='{"fwd": {"GLUON": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
timeout 200 python3 bench/nanogpt.py --attn sdpa,triton,triton-fp8 --steps 200 --batch 64 --block 1024 \
    --time-budget 180 --no-plots --out "$OUT/nanogpt" 2>&1 | grep -v Warn | tail -12
