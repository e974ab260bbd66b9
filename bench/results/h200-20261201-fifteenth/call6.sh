# Device call 6 of the fifteenth part (nvidia-h200), main's code at the commit named in the README:
# host_timing.py, perf_counter wrappers over the host path of fa_ck's fwd+bwd at B32 S512 H16 d128
# causal (call 5's cProfile inflated Python time; this adds ~1 us per wrapped call).
#   bash bench/results/h200-20261201-fifteenth/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 100 python3 bench/results/h200-20261201-fifteenth/host_timing.py 2>&1 | grep -v Warn | tee "$OUT/host_timing.txt"
