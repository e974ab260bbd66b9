# Device call 8 of the 2026-11-30 ninth part (nvidia-h200): replays from the second on hand their
# arguments straight to the compiled kernels (launch.run_compiled): GPU tests of launch.py and the
# default Gluon forward; call5_replay.py (both replays against the slow path, host time, S1024
# timings with plans on / off); call7_bwdhost.py (the backward's host time).
#   bash bench/results/h200-20261130-ninth/call8.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
date -u | tee "$OUT/env.txt"
timeout 60 python3 -m pytest tests/test_launch.py tests/test_host_path.py -q -rf -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -6
timeout 120 python3 bench/results/h200-20261130-ninth/call5_replay.py 2>&1 | grep -v Warn | tee "$OUT/replay.txt"
timeout 40 python3 bench/results/h200-20261130-ninth/call7_bwdhost.py 2>&1 | grep -v Warn | head -3 | tee "$OUT/bwdhost.txt"
