# Device call 3 (nvidia-h200), 2026-12-02: are the short fwd+bwd points' slow rounds (call 2:
# fa_ck's rounds at ~0.6 or ~0.9 ms per call, cuDNN's steady) host settings? host_modes.py, then
# bench/host.py's breakdown with direct launches on.
#   bash bench/results/h200-20261202-direct/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 300 python3 bench/results/h200-20261202-direct/host_modes.py 2>&1 | tee "$OUT/host_modes.txt" | tail -16
timeout 150 python3 bench/host.py --out /tmp/host > /tmp/host.log 2>&1; cp /tmp/host/results.md "$OUT/host.md"; tail -25 "$OUT/host.md"
