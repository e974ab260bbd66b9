# Device call 4 of the sixteenth part (nvidia-h200), at a2e0959 (bwd_preprocess zeroes ONE_PASS's
# dQ buffer; fp8 calls replay as plans): the whole GPU suite but bigmem (call 2's run of it, at
# d3e3201's kernels, was cut by its time limit at ~93 % with no failure).
#   bash bench/results/h200-20261201-sixteenth/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -k 10 500 python3 -m pytest tests -m "gpu and not bigmem" -q -p no:warnings -n 14 -rf 2>&1 \
    | grep -v "Warn\|warner" | tail -25 | tee "$OUT/gpu_suite.txt"
