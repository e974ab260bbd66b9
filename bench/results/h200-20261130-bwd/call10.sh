# Device call 10 of the 2026-11-30 backward part (nvidia-h200): the spread of the fp8 emulation
# error (call 9's one failed test), Gluon fp8 forward against forward.py's.
#   bash bench/results/h200-20261130-bwd/call10.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python:$PWD/tests PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 100 python3 bench/results/h200-20261130-bwd/call10_fp8_emu.py 2>&1 | grep -v Warn | tee "$OUT/emu.txt"
