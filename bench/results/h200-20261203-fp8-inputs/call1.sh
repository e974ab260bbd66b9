# Device call 1 of this folder (nvidia-h200), 2026-12-03 (ninth session), branch fp8-inputs-p-regs:
# a caller's fp8 inputs in the kernel fa_ck's own quantisation gets. Rescale call 5 ran the branch
# before this: its v copy (torch index_put) took 144 us at B4 S4k H16 d128, and the kernel, still
# without RAW_MAX for a caller's descales, ran 1.20-1.27x cuDNN's, not the 1.31-1.39x of the quantising call's.
# Now: the copy is one Triton launch moving bytes (quantize.keys_for_registers_kernel), and a
# caller's descales take RAW_MAX (a negative product negates the tile's q rows: forward_gluon._negate_q).
# (1) kernel_alone.py (d128, profiler, warm L2): "fp8 in" should match "bf16 in"'s forward kernel,
#     plus the copy of v;
# (2) the GPU tests of fp8 inputs and descales (test_fp8.py, test_gluon_forward.py, test_host_path.py),
#     stopped by SIGINT at 280 s so that pytest still reports what ran. (A first try of this call lost
#     the machine mid-call, 460 s of device time, no output: the test set was cut to these.)
#   bash bench/results/h200-20261203-fp8-inputs/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 bench/results/h200-20261203-rescale/kernel_alone.py "$OUT/kernel_alone.md" 2>&1 | grep -v Warn | tail -20
timeout -s INT 280 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q -p no:warnings \
    -n 14 -rf --durations=10 -k "fp8 and (input or descale or raw_max or negative or keys or registers or float32_out)" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -30 | tee "$OUT/tests.txt"
