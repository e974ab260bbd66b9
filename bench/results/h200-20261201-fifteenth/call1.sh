# Device call 1 of the fifteenth part (nvidia-h200), at the commit that adds the Gluon backward past
# d128 (backward_gluon._bwd_unit_dsplit, dQ's Gluon kernel with 32-key blocks): its GPU tests first,
# then d256 fwd+bwd timed (default: dK/dV 64 queries per step from start values; variants: from
# zero, 128 queries single-buffered, dQ 3-deep rings, and backward.py's kernels as before) beside
# SDPA cuDNN and flash, then the whole GPU suite (never run since the fourteenth part's changes).
#   bash bench/results/h200-20261201-fifteenth/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
pip list 2>/dev/null | grep -i xdist >/dev/null || echo "no xdist"
timeout 150 python3 -m pytest tests/test_gluon_backward.py -m gpu -k "past_d128" -q -p no:warnings -x -n 8 2>&1 \
    | tail -15 | tee "$OUT/wide_tests.txt"
timeout 150 python3 bench/kernels.py --out "$OUT/d256" --dtype bf16 --hdim 256 --mode fwdbwd --no-nanogpt \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 115 \
    --variant fz='{"bwd_dkdv": {"FROM_ZERO": true}}' \
    --variant bm128='{"bwd_dkdv": {"BLOCK_M": 128, "num_stages": 1}}' \
    --variant dq3='{"bwd_dq": {"num_stages": 3}}' \
    --variant old='{"bwd_dkdv": {"GLUON": false}, "bwd_dq": {"GLUON": false}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
timeout 265 python3 -m pytest tests -m "gpu and not bigmem" -k "not past_d128" -q -p no:warnings -n 12 -rf 2>&1 | tail -25 | tee "$OUT/gpu_suite.txt"
