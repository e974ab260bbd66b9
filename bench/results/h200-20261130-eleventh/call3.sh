# Device call 3 of the 2026-11-30 eleventh part (nvidia-h200): the whole GPU test suite on the new
# defaults (the Gluon forward everywhere on sm90, its softmax on the raw row max), and the first
# GPU run since the tenth part split backends/triton/__init__.py: every GPU test but the bigmem
# ones 12 at a time, then the bigmem ones (float64 references of long sequences) one at a time.
#   bash bench/results/h200-20261130-eleventh/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 380 python3 -m pytest tests -m "gpu and not bigmem" -q -rf -n 12 -p no:cacheprovider > "$OUT/pytest_parallel.log" 2>&1
echo "parallel GPU tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest_parallel.log" | tail -12
timeout 170 python3 -m pytest tests -m "gpu and bigmem" -q -rf -p no:cacheprovider > "$OUT/pytest_bigmem.log" 2>&1
echo "bigmem GPU tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest_bigmem.log" | tail -8
