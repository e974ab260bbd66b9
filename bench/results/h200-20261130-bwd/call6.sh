# Device call 6 of the 2026-11-30 backward part (nvidia-h200): the new Gluon dQ kernel
# (backward_gluon.py, software-pipelined) on its first GPU run: the Gluon backward tests, then
# fwd+bwd timed with it, with the Gluon dK/dV, both, against Triton's and cuDNN / flash.
#   bash bench/results/h200-20261130-bwd/call6.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 240 python3 -m pytest tests/test_gluon_backward.py -m gpu -q -rf -p no:cacheprovider -n 8 \
    > "$OUT/pytest.log" 2>&1
echo "gluon backward tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 300 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 240 \
    --variant gbwd='{"bwd_dkdv": {"GLUON": true}}' --variant gdq='{"bwd_dq": {"GLUON": true}}' \
    --variant gdq3='{"bwd_dq": {"GLUON": true, "num_stages": 3}}' \
    --variant gboth='{"bwd_dkdv": {"GLUON": true}, "bwd_dq": {"GLUON": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
