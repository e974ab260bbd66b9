# Device call 5 of this folder (nvidia-h200), 2026-12-04 (twelfth session), after call 4: 256-key blocks
# at d128 only from 2048 keys (decisions.fwd_fp8_wide_blocks), the sharp / past-f16 test at 2048 keys:
# the GPU tests whose key blocks that moves (-k "f16 or test_gluon_fp8_forward or fp8_p_in_registers or
# repeated_fp8" over test_gluon_forward and test_host_path).
#   bash bench/results/h200-20261204-default/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -s INT 400 python3 -m pytest tests/test_gluon_forward.py tests/test_host_path.py -q -p no:warnings -n 14 -rf \
    -k "f16 or test_gluon_fp8_forward or fp8_p_in_registers or repeated_fp8" 2>&1 \
    | grep -v "Warn\|warner\|_warn_once" | tail -25 | tee "$OUT/tests.txt"
