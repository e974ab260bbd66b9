# Device call 3 of this folder (nvidia-h200), 2026-12-03 (fourth session): the bit-for-bit test of
# Q_CONVERT, mended (its q was float32: torch.logspace). Before it, one case alone with --tb=short
# (12.6 s) showed the API's dtype error.
#   bash bench/results/h200-20261203-late-wait/call3.sh      (from the repo root)
source bench/device_env.sh >/dev/null
timeout 150 python3 -m pytest tests/test_gluon_forward.py -k "bit_for_bit" -q -p no:warnings -n 12 --tb=short 2>&1 \
    | grep -v "Warn\|warner" | tail -25 | tee $OUT/tests_bit.txt
