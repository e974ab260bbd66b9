# Device call 1 of this folder (nvidia-h200), 2026-12-03 (sixth session), at the commit that adds it:
# (1) where a replayed fp8 forward's host time goes (cProfile: the fifth session's unrun call 9,
#     ../h200-20261203-no-q8/host_profile.py);
# (2) timeline.py: clock64 marks per key block and consumer warpgroup in the Gluon forward's loop,
#     d128 full B1 S16k H16 and B4 S4k H16: fp8 default, ping-pong, ping-pong with 3-deep rings,
#     3-deep rings; bf16 default and ping-pong. Are the two warpgroups' softmaxes in step?
#   bash bench/results/h200-20261203-timeline/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
(cd "$OUT" && timeout 100 python3 "$OLDPWD/bench/results/h200-20261203-no-q8/host_profile.py" > host_profile_stdout.txt 2>&1)
echo "host_profile rc=$?"; grep -E "=====|function calls" "$OUT/host_profile.txt"
timeout 420 python3 bench/results/h200-20261203-timeline/timeline.py --out "$OUT" 2>&1 | grep -v Warn | tail -20
