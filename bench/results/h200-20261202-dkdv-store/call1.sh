# Device call 1 of this folder (nvidia-h200, 2026-12-02; call 3 of the session): dK and dV of the Gluon
# dK/dV kernel by TMA stores through shared memory (backward_gluon._consume_unit, TMA_STORE; on by default
# in the tree run) against plain stores from the accumulators (`plain`): the backward's GPU time with the
# host hidden (bwd_time.py), SDPA cuDNN and flash beside; then the Gluon backward's GPU tests, 16 at a time.
#   bash bench/results/h200-20261202-dkdv-store/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261202-dkdv-store
timeout 170 python3 $D/bwd_time.py plain='{"bwd_dkdv": {"TMA_STORE": false}}' 2>&1 | grep -v Warn \
    > "$OUT/bwd_time.txt"; grep '^|' "$OUT/bwd_time.txt"
timeout 330 python3 -m pytest tests/test_gluon_backward.py -m "gpu and not bigmem" -q -p no:warnings -n 16 -rf 2>&1 \
    | grep -v "^\s*$" | grep -v "Warn\|warner" | tail -12 | tee "$OUT/tests.txt"
