# Device call 2 of the twentieth part (nvidia-h200), at 0305479: where the short forwards' tiles spend
# their time (timeline.py: clock64 marks per tile in an instrumented copy of the Gluon forward).
#   bash bench/results/h200-20261201-twentieth/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 500 python3 bench/results/h200-20261201-twentieth/timeline.py 2>&1 | grep -v Warn | tee "$OUT/timeline.txt" | tail -40
