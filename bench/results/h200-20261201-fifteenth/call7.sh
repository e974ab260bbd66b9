# Device call 7 of the fifteenth part (nvidia-h200), main's code at the commit named in the README:
# host_probe2.py, host enqueue time per step from an empty queue (calls 4 and 6 measured back to back,
# where a full launch queue would block the host inside launches and look like host time).
#   bash bench/results/h200-20261201-fifteenth/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 100 python3 bench/results/h200-20261201-fifteenth/host_probe2.py 2>&1 | grep -v Warn | tee "$OUT/host_probe2.txt"
