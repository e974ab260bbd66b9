# Device call 8 of the seventeenth part (nvidia-h200), at 6e2a8a7: the second review's mends
# (config-level: P_REGS not in 16-bit calls' configs; the P_REGS error only where Gluon would run).
# A short GPU selection: test_host_path's fp8 tests, the caller's-fp8 and P-in-registers tests of
# the Gluon forward (the device budget left allowed no more).
#   bash bench/results/h200-20261201-seventeenth/call8.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 140 python3 -m pytest tests/test_host_path.py tests/test_gluon_forward.py \
    -k "fp8 and (host_path or inputs_float32 or p_in_registers or registers_only)" -q -p no:warnings -n 12 -rf 2>&1 \
    | grep -v "Warn\|warner" | tail -6 | tee "$OUT/tests.txt"
