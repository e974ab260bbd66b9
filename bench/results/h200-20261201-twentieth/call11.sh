# Device call 11 of the twentieth part (nvidia-h200), run 2026-12-01 in the twenty-second part:
# the head dims call 5 left out, on main and both/ (main + both patches): d256 S512/S1024 and
# d128 S1024, causal and full (short_fwd.py), beside SDPA cuDNN and flash.
#   (the trees as in call5.sh)
#   bash bench/results/h200-20261201-twentieth/call11.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261201-twentieth
export POINTS='[[32, 8, 512, 256, true], [32, 8, 512, 256, false], [16, 8, 1024, 256, true],
  [16, 8, 1024, 256, false], [16, 16, 1024, 128, true], [32, 16, 512, 128, true]]'
for t in main both; do
  P=$PWD/python; [ $t != main ] && P=$PWD/$t/python
  PYTHONPATH=$P timeout 120 python3 $D/short_fwd.py 2>&1 | grep -v Warn > "$OUT/fwd_$t.txt"
  mv "$OUT/short_fwd.json" "$OUT/fwd_$t.json"
  grep "^| d" "$OUT/fwd_$t.txt" | sed "s/^/$t /"
done
