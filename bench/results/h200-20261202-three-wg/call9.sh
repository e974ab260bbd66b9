# Device call 9 (nvidia-h200), 2026-12-02, fourth part: issue 6's standing at aeacb82 (own Q barriers for 192 queries):
# bench/kernels.py --quick (bf16, d64 and d128, S 1k / 4k / 16k, causal and full, forward and fwd+bwd,
# the nanoGPT shape), fa_ck against SDPA cuDNN and flash in the same run, 5 rounds, autograd's
# multithreading off.
#   bash bench/results/h200-20261202-three-wg/call9.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 430 python3 bench/kernels.py --quick --out "$OUT/kernels" --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --rounds 5 --autograd-threads off --time-budget 400 2>&1 | grep -v Warn | tail -8
rm -f "$OUT"/kernels/*.png
grep -B2 -A18 "## Targets\|## Forward: TFLOP\|## Forward + backward: TFLOP" "$OUT"/kernels/results.md | head -70
