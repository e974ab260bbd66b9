# Device call 6 of this folder (nvidia-h200, 2026-12-02; call 9 of the session, the last ~300 s of device
# time): dK / dV by TMA stores on two-pass calls (d64 full: dQ by its own kernel) against plain stores
# (`plain`): the backward's GPU time with the host hidden, SDPA cuDNN and flash beside.
#   bash bench/results/h200-20261202-dkdv-store/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261202-dkdv-store
POINTS='[[32,32,512,64,false],[16,32,1024,64,false]]' timeout 100 python3 $D/bwd_time.py \
    plain='{"bwd_dkdv": {"TMA_STORE": false}}' 2>&1 | grep -v Warn > "$OUT/bwd_time.txt"
grep '^|' "$OUT/bwd_time.txt"
