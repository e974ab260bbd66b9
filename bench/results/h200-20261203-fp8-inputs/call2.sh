# Device call 2 of this folder (nvidia-h200), 2026-12-03 (ninth session), branch fp8-inputs-p-regs:
# a caller's fp8 inputs with their three descales now replay as plans (descales and the copy of v
# are slots of the plan: call 1 showed ~64 us per call of host-bound lag at S4k causal on the
# slow path), and _negate_q sits behind a constexpr (call 1's bf16 Gluon forward would not have
# compiled: the CPU offline compile caught it).
# (1) kernel_alone.py (d128, profiler, warm L2): "fp8 in" calls should now come close to their kernels;
# (2) GPU tests: fp8 inputs and descales, the replays (fp8 of both kinds), and bf16 Gluon forwards
#     (192-query tiles, head dims past 128), SIGINT at 280 s so that pytest reports.
#   bash bench/results/h200-20261203-fp8-inputs/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 bench/results/h200-20261203-rescale/kernel_alone.py "$OUT/kernel_alone.md" 2>&1 | grep -v Warn | tail -20
timeout -s INT 280 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q -p no:warnings \
    -n 14 -rf --durations=5 -k "(fp8 and (input or descale or raw_max or negative or keys or registers or float32_out or replay)) or test_a_repeated_call or test_gluon_forward_192_queries_by_default or test_gluon_forward_at_head_dims_past_128" 2>&1 \
    | grep -v "Warn\|warner\|_warn_once" | tail -30 | tee "$OUT/tests.txt"
