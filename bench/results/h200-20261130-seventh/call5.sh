# Device call 5 of the 2026-11-30 seventh part (nvidia-h200): the one-pass kernel's dQ tiles now
# go to the TMA reduce-add through a shared-memory tile of its own, not waited for until the next
# block (call 4: the wait right after each add left the tensor cores idle). GPU tests of the
# Gluon backward and the launch path; kernel-by-kernel profile (call4_profile.py); d128 and d64
# fwd+bwd speed of the variants, 3 interleaved rounds (kernels.py).
#   bash bench/results/h200-20261130-seventh/call5.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
date -u | tee "$OUT/env.txt"
timeout 200 python3 -m pytest tests/test_gluon_backward.py tests/test_launch.py \
    -q -rf -p no:cacheprovider -n 8 > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 150 python3 bench/results/h200-20261130-seventh/call4_profile.py 2>&1 | grep -v Warn | tee "$OUT/profile.txt"
timeout 250 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 --hdim 128 64 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 200 \
    --variant rs64='{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false}}' \
    --variant onepass='{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": true, "ONE_PASS": true}}' \
    --variant onepassrs='{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, "ONE_PASS": true}}' \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/kernels/*.png
grep -A16 "Gradient relative error" "$OUT/kernels/results.md" | grep -v "e-03 (d.) | .*e-03 (d.) | .*e-03 (d.) | .*e-03 (d.) |"
