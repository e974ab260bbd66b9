# Device call 3 of this folder (nvidia-h200), 2026-12-03 (sixth session), at the commit that adds it:
# host_split.py: a replayed call's host time layer by layer (fp8 of bf16 inputs against bf16).
#   bash bench/results/h200-20261203-timeline/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 120 python3 bench/results/h200-20261203-timeline/host_split.py 2>&1 | grep -v Warn | tail -24
