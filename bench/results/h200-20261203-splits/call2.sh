# Device call 2 of this folder (nvidia-h200), 2026-12-03 (third session), run in the fourth session (its device budget was spent in the third; output in call2/): GQA under a causal mask, where fwd+bwd
# lags (call 1: d64 0.89x, d128 0.95x at S4k). The dK/dV kernel's switches on those points (fa_ck's default
# there: one pass, persistent, units from the counter): two passes (the Gluon dQ kernel), one program per unit,
# round-robin units, dK / dV by TMA stores.
#   bash bench/results/h200-20261203-splits/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout ${LIMIT:-160} python3 bench/kernels.py --group 4 --hdim 64 128 --seqlens 4096 --dtype bf16 --causal on \
    --mode fwdbwd --rounds 2 --backends fa_ck-triton sdpa-cudnn sdpa-flash --no-nanogpt --autograd-threads off \
    --variant twopass='{"bwd_dkdv": {"ONE_PASS": false}}' --variant single='{"bwd_dkdv": {"PERSISTENT": false}}' \
    --variant static='{"bwd_dkdv": {"DYNAMIC": false, "PERSISTENT": true}}' \
    --variant tmastore='{"bwd_dkdv": {"TMA_STORE": true}}' --out "$OUT/gqa" 2>&1 | tail -12
