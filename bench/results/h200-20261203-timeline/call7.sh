# Device call 7 of this folder (nvidia-h200), 2026-12-03 (sixth session), at the commit that adds it:
# the fp8 replay's quantisation buffers as parts of one workspace (plans._Part, a memset step):
# (1) GPU tests: test_fp8.py, test_host_path.py, test_launch.py, test_driver_launch.py, and the Gluon
#     fp8 forward's Q_CONVERT bit-for-bit test (fp8 replays);
# (2) host time per replayed call (../h200-20261203-no-q8/host_time.py), this tree against the
#     tree before (old/: `git archive` of the parent commit's python/, not kept), same run.
#   bash bench/results/h200-20261203-timeline/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 100 python3 -m pytest tests/test_fp8.py tests/test_host_path.py tests/test_launch.py tests/test_driver_launch.py \
    tests/test_gluon_forward.py -k "not test_gluon_forward.py or bit_for_bit" -m "not bigmem" \
    -q -p no:warnings -n 14 -rf 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
for tree in new old; do
    mkdir -p "$OUT/$tree"
    if [ $tree = old ]; then PP=$PWD/bench/results/h200-20261203-timeline/old/python; else PP=$PWD/python; fi
    OUT="$OUT/$tree" PYTHONPATH=$PP timeout 40 python3 bench/results/h200-20261203-no-q8/host_time.py 2>&1 | grep -v Warn | tail -7
done
