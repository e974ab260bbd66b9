# Device call 6 of the 2026-11-30 thirteenth part (nvidia-h200): the review mends' GPU tests
# (dq_from_acc against torch.mul on the GPU, every dK/dV ask's DYNAMIC check, persistent and
# dynamic grids, windows and varlen).
#   bash bench/results/h200-20261130-thirteenth/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 -m pytest tests/test_gluon_backward.py -q -rf -n 12 -p no:cacheprovider -m gpu \
    -k "dq_from_acc or persistent or dkdv_windows or (dkdv_matches and (dynamic or host_desc_one_pass or persistent))" \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
