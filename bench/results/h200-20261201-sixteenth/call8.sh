# Device call 8 of the sixteenth part (nvidia-h200), at b48767f, right after call 7 on the warm
# machine (run as this one command line): the Gluon forward's fp8 tests.
#   bash bench/results/h200-20261201-sixteenth/call8.sh      (from the repo root)
source bench/device_env.sh >/dev/null; timeout -k 5 100 python3 -m pytest tests/test_gluon_forward.py -k fp8 -q \
    -p no:warnings -n 8 -rf 2>&1 | grep -v "Warn\|warner" | tail -4 | tee "$OUT/gluon_fp8_tests.txt"
