# Device call 4 of this folder (nvidia-h200, 2026-12-02; call 7 of the session): call 2's d128 S1024 causal
# fwd+bwd (0.77x) against call 3's backward alone (0.95x with TMA stores): bench/kernels.py there, forward
# and fwd+bwd, autograd's multithreading off, fa_ck by default and with plain dK / dV stores (`plain`).
#   bash bench/results/h200-20261202-dkdv-store/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 bench/kernels.py --out "$OUT/k" --dtype bf16 --hdim 128 --mode both --causal on \
    --seqlens 1024 --no-nanogpt --backends fa_ck-triton sdpa-cudnn --rounds 5 --time-budget 120 \
    --variant 'plain={"bwd_dkdv": {"TMA_STORE": false}}' --autograd-threads off 2>&1 | grep "^bf16" | tail -8
python3 -c "
import json; r = json.load(open('$OUT/k/results.json'))
for x in r['points']:
    print(x['S'], x['mode'], x['backend'], [round(m, 3) for m in x['ms_rounds']], x.get('ratio_cudnn'))"
rm -f "$OUT"/k/*.png
