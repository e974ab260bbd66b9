# Device call 4 of this folder (nvidia-h200), 2026-12-02, seventh part: call 3's GPU tests were cut by their
# limit after ~92 % (no failure among the last half shown, the summary lost); here the Gluon forward's
# tests that reach Q_REGS alone (16-bit, d <= 128; the dK/dV kernel's K_REGS code is call 2's, 598 passed).
#   bash bench/results/h200-20261202-kvregs/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 240 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf -k \
    "(matches_reference or short_causal or even_keys or pingpong or windows or varlen) and not fp8 and not past_d128" \
    2>&1 | grep -v "^\s*$" | grep -v "Warn\|warner" | grep -v "^\.*\s*\[" | tail -12 | tee "$OUT/tests.txt"
