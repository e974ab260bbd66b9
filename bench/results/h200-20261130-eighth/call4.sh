# Device call 4 of the 2026-11-30 eighth part (nvidia-h200): call 3's wrong outputs isolated
# (call4_desc_debug.py: the 4-D descriptor load alone, then the forward with host and device
# descriptors). Ran on 7dfbe61 with the helper beside it.
#   bash bench/results/h200-20261130-eighth/call4.sh      (from the repo root)
export PYTHONPATH=$PWD/python
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
timeout 200 python3 bench/results/h200-20261130-eighth/call4_desc_debug.py 2>&1 | tail -30 | tee "$OUT/debug.txt"
