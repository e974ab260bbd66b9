# Device call 3 of this folder (nvidia-h200), 2026-12-03 (seventh session): the two brute-force tests
# of the key-block bounds whose helper kernel did not compile for a GPU (a generator expression: the
# interpreter takes it, Triton's compiler does not; call 2's two failures), written out; with the
# LATE_SUM decision's test and the Gluon forward's fp8 diagonal-first tests beside.
#   bash bench/results/h200-20261203-tree/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_gluon_forward.py tests/test_triton_kernels.py -q -p no:warnings -n 8 -rf \
    -k "warpgroup_blocks_skip or diag_first_only or late_sum or diagonal_first" 2>&1 | grep -v "Warn\|warner" | tail -8 \
    | tee "$OUT/tests.txt"
