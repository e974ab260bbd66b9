# Device call 2 of the seventeenth part (nvidia-h200), at 7ed9357: call 1's fp8 forwards at short
# lengths took the slow path every call (the quantisation launch was handed a view of v8 that is
# no plan slot: no plan was kept); mended. The replay tests (test_host_path's fp8 case, which
# would have caught it, and test_fp8's), the fp8 forward again (P in registers / staged, d128
# S1k-16k, 3 rounds, beside fa_ck bf16, SDPA cuDNN and flash), then Nsight Compute counters of
# the fp8 kernel both ways beside fa_ck's bf16 forward and cuDNN's fprop (ncu_fp8.py).
#   bash bench/results/h200-20261201-seventeenth/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 150 python3 -m pytest tests/test_host_path.py tests/test_fp8.py -k "fp8 or replays" -q -p no:warnings -n 8 \
    -rf 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
timeout 200 python3 bench/kernels.py --out "$W/d128" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8staged='{"fwd": {"P_REGS": false}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | grep "^bf16"
cp $W/d128/results.md "$OUT/d128.md"
timeout 200 ncu --profile-from-start off --clock-control none --target-processes all \
    --kernel-name regex:"fwd_gluon|cudnn_generated" \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats \
    --section SchedulerStats --section WarpStateStats --section Occupancy --print-details all \
    python3 bench/results/h200-20261201-seventeenth/ncu_fp8.py > "$W/ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "profiled|==ERROR==" "$W/ncu.txt" | head
grep -E "^  [a-zA-Z_]+.*\(|Duration|Issue Slots Busy|Executed Ipc A|No Eligible|Pipe|pipe|XU|Tensor|Shared|Stall|stall" \
    "$W/ncu.txt" | head -150 > "$OUT/ncu_summary.txt"
rm -f $W/*/*.png
tar czf "$OUT/call2_all.tgz" -C "$OUT" w
