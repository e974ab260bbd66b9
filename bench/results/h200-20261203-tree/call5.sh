# Device call 5 of this folder (nvidia-h200), 2026-12-03 (seventh session): LATE_SUM asked for keeps
# a call on two warpgroups (the three-warpgroup forward had dropped it silently) and, asked beside
# BLOCK_M 192, is refused before any launch: the Gluon forward's three-warpgroup and 192-query tests
# in every schedule (the `late-sum-persistent-3` one expects the refusal).
#   bash bench/results/h200-20261203-tree/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 240 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -n 14 -rf \
    -k "three_warpgroups or 192 or late_sum" 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
