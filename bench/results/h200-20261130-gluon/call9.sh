# Device call 9 of the 2026-11-30 Gluon part (nvidia-h200): the ping-pong variant of the Gluon
# forward (consumer warpgroups take turns to issue their multiplies): its GPU tests, then the
# long and short points timed alternately against the plain Gluon forward, forward.py and cuDNN.
#   bash bench/results/h200-20261130-gluon/call9.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 100 python3 -m pytest tests/test_gluon_forward.py -m gpu -k "pingpong" -q -p no:cacheprovider -n 6 > "$OUT/pytest.log" 2>&1
echo "pingpong tests rc=$?"; tail -3 "$OUT/pytest.log"
timeout 90 python3 bench/results/h200-20261130-gluon/call9_pingpong.py long 2>&1 | tee "$OUT/long.txt"
timeout 60 python3 bench/results/h200-20261130-gluon/call9_pingpong.py 2>&1 | tee "$OUT/short.txt"
