# Device call 4 of the fifteenth part (nvidia-h200), main's code at the commit named in the README:
# host_probe.py, whether fa_ck's fwd+bwd is host-bound at the short shapes (call 3: at B32 S512
# H16 d128 causal the sweep timed 748 us per fwd+bwd where profile_short.py summed 595 us of kernels;
# cuDNN 505 and 494), beside SDPA cuDNN.
#   bash bench/results/h200-20261201-fifteenth/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 bench/results/h200-20261201-fifteenth/host_probe.py 2>&1 | grep -v Warn | tee "$OUT/host_probe.txt"
