# Device call 9 of this folder (nvidia-h200), 2026-12-03 (fifth session), at the commit that adds it:
# where call 8's host time goes: cProfile of replayed fp8 and bf16 forwards (host_profile.py).
#   bash bench/results/h200-20261203-no-q8/call9.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 100 python3 bench/results/h200-20261203-no-q8/host_profile.py > "$OUT/stdout.txt" 2>&1
echo "rc=$?"; grep -E "=====|function calls" "$OUT/host_profile.txt"
