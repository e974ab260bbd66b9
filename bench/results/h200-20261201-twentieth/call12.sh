# Device call 12 of the twentieth part (nvidia-h200), run 2026-12-01 in the twenty-second part.
# The persistent Gluon forward with an odd count of query blocks per head: its middle block is a
# unit alone (half as heavy), and with 132 programs a multiple of the units per head each program
# took the same unit of every head. New: the program count coprime to the units per head
# (launch_gluon._coprime_programs). old/ is 715f967's python/ tree (made below from git);
# the working tree is the new code. short_fwd.py on both, then every element of the new
# forward's output against float64 at the odd points (odd_tiles_check.py).
#   bash bench/results/h200-20261201-twentieth/call12.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261201-twentieth
export POINTS='[[48, 32, 384, 64, true], [48, 32, 384, 64, false], [32, 16, 384, 128, true],
  [24, 32, 640, 64, true], [16, 32, 896, 64, true], [32, 32, 512, 64, true]]'
for t in old new; do
  P=$PWD/python; [ $t = old ] && P=$PWD/old/python
  PYTHONPATH=$P timeout 110 python3 $D/short_fwd.py 2>&1 | grep -v Warn > "$OUT/fwd_$t.txt"
  mv "$OUT/short_fwd.json" "$OUT/fwd_$t.json"
  grep "^| d" "$OUT/fwd_$t.txt" | sed "s/^/$t /"
done
PYTHONPATH=$PWD/python timeout 60 python3 $D/odd_tiles_check.py 2>&1 | grep -v Warn | tee "$OUT/check.txt"
