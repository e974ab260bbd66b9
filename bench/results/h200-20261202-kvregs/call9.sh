# Device call 9 of this folder (nvidia-h200), 2026-12-02, eighth part: the tree with LSE_PREP at every
# head dim. (1) The GPU suite's files not run in calls 7-8 (the Gluon forward's tests, the API's, the
# launchers'; failures named); (2) config-only variants at d128 whose earlier measurements predate
# LSE_PREP, backward GPU time with the host hidden: host-made descriptors on causal calls from 4k keys
# (`host`; default off there: h200-20261130-tenth), a persistent round-robin grid (`persist`) and one
# taking units from a counter (`dynamic`; -2 to -3.5 % at d128 in h200-20261130-thirteenth call 1).
#   bash bench/results/h200-20261202-kvregs/call9.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
B=$PWD/bench/results/h200-20261202-dkdv-store
export POINTS='[[4,16,4096,128,true],[4,16,4096,128,false],[1,16,16384,128,true],[16,16,1024,128,true]]'
timeout 100 python3 $B/bwd_time.py host='{"bwd_dkdv": {"HOST_DESC": true}}' \
    persist='{"bwd_dkdv": {"HOST_DESC": true, "PERSISTENT": true}}' \
    dynamic='{"bwd_dkdv": {"HOST_DESC": true, "PERSISTENT": true, "DYNAMIC": true}}' 2>&1 | grep -v Warn > "$OUT/bwd_time.txt"
timeout -k 10 300 python3 -m pytest tests -m "gpu and not bigmem" -q -p no:warnings -n 16 -rf \
    --ignore tests/test_gluon_backward.py --ignore tests/test_triton_kernels.py \
    2>&1 | grep -v "^\s*$" | grep -v "Warn\|warner" | grep -v "^\.*\s*\[" | tail -10 | tee "$OUT/tests.txt"
grep '^|' "$OUT/bwd_time.txt"
