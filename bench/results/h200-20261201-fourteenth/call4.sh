# Device call 4 of the fourteenth part (nvidia-h200): issue 6's sweep at main's kernels and
# defaults (the thirteenth part's; this part's two forward switches were reverted), bf16, head
# dims 64 / 128 / 256, 512-16k, causal or not, forward and forward + backward, every backend but
# autotune (its searches alone would spend the call) in one run, one timing per point.
#   bash bench/results/h200-20261201-fourteenth/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 560 python3 bench/kernels.py --out "$OUT/sweep" --dtype bf16 --rounds 1 --time-budget 470 \
    --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash sdpa-efficient sdpa-default flex naive \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met\|not running\|estimated"
