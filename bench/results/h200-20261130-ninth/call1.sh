# Device call 1 of the 2026-11-30 ninth part (nvidia-h200): GPU tests of the review mends
# (launch-time switch checks in every forward schedule, TMA_STORE/HOST_DESC rules) and of the
# Gluon dK/dV kernel with host-made descriptors (bwd_dkdv HOST_DESC, never GPU-run before); the
# fp8 forward by parts (the quantisation is now two Triton passes); then forward and
# forward+backward at d128/d64 against SDPA cuDNN and flash in the same run, with
# bwdhost = the dK/dV kernel on host-made descriptors, and fa_ck-fp8 (forward only).
#   bash bench/results/h200-20261130-ninth/call1.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 200 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "not (test_gluon_forward and (per-tile or device-desc or persistent-3))" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 70 python3 bench/results/h200-20261130-eighth/call2_fp8parts.py 2>&1 | tee "$OUT/fp8parts.txt"
timeout 280 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 3 --time-budget 250 \
    --variant bwdhost='{"bwd_dkdv": {"HOST_DESC": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
