# Device call 8 of the fifteenth part (nvidia-h200), main's code at the commit named in the README:
# host_tiny.py, fa_ck's host time per call at a shape whose kernels take ~10 us (the GPU cannot be
# the bound), forward / forward with autograd / fwd+bwd, SDPA cuDNN beside, then where it goes.
#   bash bench/results/h200-20261201-fifteenth/call8.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 100 python3 bench/results/h200-20261201-fifteenth/host_tiny.py 2>&1 | grep -v Warn | tee "$OUT/host_tiny.txt"
