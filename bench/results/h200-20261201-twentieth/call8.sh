# Device call 8 of the twentieth part (nvidia-h200), run 2026-12-01 in the twenty-second part.
# bench/kernels.py's short fwd+bwd swung too much (calls 6-7) to say whether one_bound.patch
# slows the backward: here the backward alone, GPU time with the host hidden (short_bwd.py), on
# main and on one/ (main + one_bound.patch), beside SDPA cuDNN and flash.
#   (the trees as in call5.sh)
#   bash bench/results/h200-20261201-twentieth/call8.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261201-twentieth
for t in main one; do
  P=$PWD/python; [ $t != main ] && P=$PWD/$t/python
  PYTHONPATH=$P timeout 150 python3 $D/short_bwd.py 2>&1 | grep -v Warn > "$OUT/bwd_$t.txt"
  mv "$OUT/short_bwd.json" "$OUT/bwd_$t.json"
  grep "^| d" "$OUT/bwd_$t.txt" | sed "s/^/$t /"
done
