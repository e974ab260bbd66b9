# Device call 4 of the twentieth part (nvidia-h200), at 29ce841: where the short forwards' tiles spend
# their time, each warp of warpgroup 0 marked inside the tile (timeline.py as of this commit).
#   bash bench/results/h200-20261201-twentieth/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 500 python3 bench/results/h200-20261201-twentieth/timeline.py 2>&1 | grep -v Warn | tee "$OUT/timeline.txt" | tail -40
