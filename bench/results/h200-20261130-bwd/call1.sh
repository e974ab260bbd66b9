# Device call 1 of the 2026-11-30 backward part (nvidia-h200): the Gluon GPU tests (forward after
# the last refactors, the experimental dK/dV kernel for the first time), then fwd+bwd timed
# with bench/kernels.py's interleaved rounds: Triton dK/dV against the Gluon one, cuDNN, flash.
#   bash bench/results/h200-20261130-bwd/call1.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 200 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py -m gpu -q -rf -x \
    -p no:cacheprovider -n 6 > "$OUT/pytest.log" 2>&1
echo "gluon tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -15
timeout 300 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --variant gbwd='{"bwd_dkdv": {"GLUON": true}}' --rounds 3 --time-budget 220
echo "kernels rc=$?"; rm -f "$OUT"/kernels/*.png; cat "$OUT"/kernels/*.md
