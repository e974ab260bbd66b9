# Device call 4 of the eighteenth part (nvidia-h200), at 06b9774: the whole GPU suite but bigmem, with
# the fp8 forward's Gluon kernel now the default at d64 (last whole run: the sixteenth part's call 4,
# before P in registers).
#   bash bench/results/h200-20261201-eighteenth/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout -k 10 520 python3 -m pytest tests -m "gpu and not bigmem" -q -p no:warnings -n 14 -rf 2>&1 \
    | grep -v "Warn\|warner" | tail -15 | tee "$OUT/suite.txt"
