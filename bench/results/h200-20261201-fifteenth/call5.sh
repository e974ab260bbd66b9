# Device call 5 of the fifteenth part (nvidia-h200), main's code at the commit named in the README:
# host_profile.py, cProfile of fa_ck's fwd+bwd host path at B32 S512 H16 d128 causal (call 4: host-bound).
#   bash bench/results/h200-20261201-fifteenth/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 100 python3 bench/results/h200-20261201-fifteenth/host_profile.py 2>&1 | grep -v Warn > "$OUT/host_profile.txt"
grep -A32 "tottime" "$OUT/host_profile.txt" | head -34
