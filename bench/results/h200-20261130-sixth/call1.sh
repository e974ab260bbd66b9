# Device call 1 of the 2026-11-30 sixth part (nvidia-h200): the Gluon GPU tests after the last
# part's unverified changes (shared ring barriers, the fp8 one-row bound), host time layer by
# layer inside autograd's engine thread (call1_engine.py), and kernels.py's fp8 variants once.
#   bash bench/results/h200-20261130-sixth/call1.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 120 python3 bench/results/h200-20261130-sixth/call1_engine.py > "$OUT/engine.txt" 2>&1
echo "engine rc=$?"; grep -B0 -A12 "per call" "$OUT/engine.txt" | grep -v "^--" | head -90
grep -A 32 "Ordered by: internal" "$OUT/engine.txt" | cut -c1-150
timeout 240 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py -q -rf -x \
    -p no:cacheprovider -n 8 > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 90 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 --mode fwd \
    --seqlens 4096 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8tri='{"fwd": {"GLUON": false}}' --rounds 2 --time-budget 60 2>&1 | grep -v Warn | grep "^\[\|MISS\|met\|fp8"
rm -f "$OUT"/kernels/*.png
