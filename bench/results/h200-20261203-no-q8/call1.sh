# Device call 1 of this folder (nvidia-h200), 2026-12-03 (fifth session), at the commit that adds it:
# (1) GPU tests of the fp8 forward making no q8 where the Gluon kernel rounds q itself (Q_CONVERT):
#     its peak memory (slow path and replay), Q_CONVERT bit for bit against q8 in four schedules,
#     test_fp8.py, test_host_path.py and test_launch.py whole;
# (2) fp8 d128 forward S1k / S4k / S16k, the default against `fp8q8` (Q_CONVERT off: q8 made and
#     written), 3 rounds, SDPA cuDNN and flash beside: speed, error and peak memory;
# (3) Nsight Compute counters of the backward under a causal mask, GQA against plain attention of
#     the same q heads (ncu_gqa.py), where GQA's fwd+bwd lags cuDNN's.
#   bash bench/results/h200-20261203-no-q8/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 230 python3 -m pytest tests/test_gluon_forward.py tests/test_fp8.py tests/test_host_path.py tests/test_launch.py \
    -k "bit_for_bit or no_q8 or test_fp8.py or test_host_path.py or test_launch.py" -m "not bigmem" \
    -q -p no:warnings -n 14 -rf 2>&1 | grep -v "Warn\|warner" | tail -12 | tee "$OUT/tests.txt"
timeout 150 python3 bench/kernels.py --out "$W/fp8" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 1024 4096 16384 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash \
    --variant fp8q8='{"fwd": {"Q_CONVERT": false}}' --rounds 3 --no-nanogpt 2>&1 | grep -v Warn | tail -8
cp $W/fp8/results.md "$OUT/fp8.md"
timeout 150 ncu --profile-from-start off --clock-control none --target-processes all \
    --kernel-name regex:"bwd_" \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section SchedulerStats --section WarpStateStats --section LaunchStats --section Occupancy --print-details all \
    python3 bench/results/h200-20261203-no-q8/ncu_gqa.py > "$W/ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "profiled|==ERROR==" "$W/ncu.txt" | head
grep -E "^  [a-zA-Z_]+.*\(|Duration|Issue Slots Busy|Executed Ipc A|No Eligible|Pipe|pipe|Tensor|L2 Hit|DRAM Through|Memory Through|Stall|stall|Waves|Registers|Grid Size" \
    "$W/ncu.txt" | head -260 > "$OUT/ncu_summary.txt"
rm -f $W/*/*.png
tar czf "$OUT/call1_all.tgz" -C "$OUT" w
