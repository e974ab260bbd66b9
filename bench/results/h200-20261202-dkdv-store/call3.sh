# Device call 3 of this folder (nvidia-h200, 2026-12-02; call 6 of the session): call 2's d128 S1024 causal
# fwd+bwd fell to 0.77x of cuDNN (0.91x in h200-20261202-direct call 2): the backward's GPU time there and
# beside it with dK / dV by TMA stores (the default up to 1024 query rows) and by plain stores (`plain`).
#   bash bench/results/h200-20261202-dkdv-store/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261202-dkdv-store
POINTS='[[16,16,1024,128,true],[16,16,1024,128,false],[32,16,512,128,true],[64,12,1024,64,true]]' \
    timeout 120 python3 $D/bwd_time.py plain='{"bwd_dkdv": {"TMA_STORE": false}}' \
    persist_off='{"bwd_dkdv": {"PERSISTENT": false}}' 2>&1 | grep -v Warn > "$OUT/bwd_time.txt"
grep '^|' "$OUT/bwd_time.txt"
