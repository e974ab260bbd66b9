# Device call 2 of the fourteenth part (nvidia-h200), main's kernels: the DYNAMIC replay /
# CUDA-graph test (mended after call 1) and the bigmem GPU tests; then Nsight Compute counters of
# fa_ck's forward and dK/dV kernels beside cuDNN's fprop / bprop (ncu_shapes.py: the nanoGPT
# shape and d128 S4k causal): throughput, pipes, shared memory, issue and warp stalls.
#   bash bench/results/h200-20261201-fourteenth/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 60 python3 -m pytest tests/test_gluon_backward.py -q -rf -p no:cacheprovider -m gpu \
    -k dynamic_dkdv_replays > "$OUT/pytest.log" 2>&1
echo "test rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -4
timeout 160 python3 -m pytest tests -q -rf -p no:cacheprovider -m bigmem > "$OUT/pytest_bigmem.log" 2>&1
echo "bigmem tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest_bigmem.log" | tail -8
which ncu; ncu --version | tail -1
timeout 300 ncu --profile-from-start off --clock-control none --target-processes all \
    --kernel-name regex:"fwd_gluon|bwd_dkdv_gluon|cudnn_generated" \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section SchedulerStats --section WarpStateStats \
    --section Occupancy --section LaunchStats \
    python3 bench/results/h200-20261201-fourteenth/ncu_shapes.py > "$OUT/ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "profiled|==PROF==|==ERROR==|==WARNING==" "$OUT/ncu.txt" | head -20
grep -E "^  [a-z_]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Shared Memory|Issue Slots Busy|No Eligible|Executed Ipc A" "$OUT/ncu.txt" | head -80
