# Device call 8 of this folder (nvidia-h200), 2026-12-03 (fifth session), at the commit that adds it:
# host time of a replayed fp8 forward (host_time.py: a tiny shape whose call loop is host-bound, and
# call 1's S1k causal point), beside fa_ck's bf16 forward and SDPA cuDNN's.
#   bash bench/results/h200-20261203-no-q8/call8.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 bench/results/h200-20261203-no-q8/host_time.py 2>&1 | grep -v Warn | tee "$OUT/host_time.md"
