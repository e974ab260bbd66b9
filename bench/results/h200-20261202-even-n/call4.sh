# Device call 4 (nvidia-h200), 2026-12-02, fifth part: call 3's tests had one failure, cut by their time
# limit before pytest named it; the likeliest, test_gluon_fp8_forward, compares against a torch emulation
# that walks the key blocks in order (fp8's P rounds against the running max, so the order shows). DIAG_FIRST
# is now off for fp8; this call runs the new test and the fp8 forward's, failures named (-rf).
#   bash bench/results/h200-20261202-even-n/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 120 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu -n 16 -rf \
    -k "even_keys or fp8_forward" 2>&1 | grep -v "^\s*$" | tail -12 | tee "$OUT/tests.txt"
