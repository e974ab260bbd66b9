# Device call 5 of this folder (nvidia-h200), written 2026-12-03 (eighth session) on branch
# fp8-inputs-p-regs, NOT RUN (the device budget was spent): a caller's fp8 v copied into the Gluon
# forward's key order (quantize.keys_for_registers), so fp8 inputs keep P in registers (P_REGS) as
# fa_ck's own quantisation does; call 4 measured their kernel with P staged at 1.18-1.33x cuDNN's bf16
# kernel against 1.35-1.43x with P in registers.
# (1) GPU tests of the fp8 paths: test_fp8.py, the Gluon forward's fp8 tests (fp8 inputs among them, in
#     every schedule), the host path's fp8 tests;
# (2) kernel_alone.py again: "fp8 in" should now run with P in registers (plus the copy of v).
#   bash bench/results/h200-20261203-rescale/call5.sh      (from the repo root, on the branch)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q -p no:warnings \
    -n 14 -rf -k "test_fp8.py or fp8" 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
timeout 140 python3 bench/results/h200-20261203-rescale/kernel_alone.py "$OUT/kernel_alone.md" 2>&1 | grep -v Warn | tail -20
