# Device call 1 of the 2026-11-30 seventh part (nvidia-h200): GPU tests of the one-pass Gluon
# backward (dQ by fp32 atomics inside the dK/dV kernel), the launch path and the API; then
# fwd+bwd speed of the one-pass variant against the defaults, SDPA cuDNN and flash (same run).
#   bash bench/results/h200-20261130-seventh/call1.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 200 python3 -m pytest tests/test_gluon_backward.py tests/test_launch.py tests/test_api.py \
    -q -rf -p no:cacheprovider -n 8 > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 260 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 220 \
    --variant onepass='{"bwd_dkdv": {"GLUON": true, "ONE_PASS": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
cat "$OUT/kernels/results.md" 2>/dev/null | tail -40
