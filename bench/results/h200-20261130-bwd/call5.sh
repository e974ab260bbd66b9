# Device call 5 of the 2026-11-30 backward part (nvidia-h200): after the eager path (ops._Eager,
# no custom-op dispatch outside torch.compile) and cached per-call constants: host time again
# (calls 3 and 4's scripts), the API/feature tests on the GPU, then fwd and fwd+bwd timings.
#   bash bench/results/h200-20261130-bwd/call5.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 60 python3 bench/results/h200-20261130-bwd/call3_host.py 2>&1 | grep "per call" | tee "$OUT/host.txt"
timeout 60 python3 bench/results/h200-20261130-bwd/call4_layers.py 2>&1 | tee "$OUT/layers.txt"
timeout 150 python3 -m pytest tests/test_api.py tests/test_features.py tests/test_gluon_forward.py -q -rf -x \
    -p no:cacheprovider -n 8 > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 280 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --variant gbwd='{"bwd_dkdv": {"GLUON": true}}' --rounds 3 --time-budget 220 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
