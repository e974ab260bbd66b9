# Device call 10 of the twentieth part (nvidia-h200), run 2026-12-01 in the twenty-second part:
# the patches apart in the short forwards (short_fwd.py, call 5's points) on one/ and pw/, with
# main's default in the same run, beside SDPA cuDNN and flash.
#   (the trees as in call5.sh)
#   bash bench/results/h200-20261201-twentieth/call10.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261201-twentieth
export POINTS='[[64, 32, 256, 64, true], [48, 32, 384, 64, true], [32, 32, 512, 64, true],
  [64, 12, 1024, 64, true], [32, 16, 512, 128, true], [32, 8, 512, 256, true]]'
for t in main one pw; do
  P=$PWD/python; [ $t != main ] && P=$PWD/$t/python
  PYTHONPATH=$P timeout 100 python3 $D/short_fwd.py 2>&1 | grep -v Warn > "$OUT/fwd_$t.txt"
  mv "$OUT/short_fwd.json" "$OUT/fwd_$t.json"
  grep "^| d" "$OUT/fwd_$t.txt" | sed "s/^/$t /"
done
