# Device call 4 of this folder (nvidia-h200), 2026-12-03 (eighth session):
# (1) GPU tests after the two module moves (call_config.py out of the backend's __init__, decisions.py out of
#     configs.py; no behaviour change): the Gluon forward's default-schedule tests, dK/dV against the reference
#     in one schedule, test_fp8.py and test_launch.py;
# (2) the fp8 forward's standing kernel by kernel (kernel_alone.py): fa_ck fp8 on bf16 inputs (quantisation
#     + forward), on fp8 inputs with descales (forward alone, P staged), SDPA cuDNN and flash, d128
#     S4k / S16k, full and causal, torch.profiler CUDA times per kernel and CUDA events per call, same run.
#   bash bench/results/h200-20261203-rescale/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 140 python3 bench/results/h200-20261203-rescale/kernel_alone.py "$OUT/kernel_alone.md" 2>&1 | grep -v Warn | tail -20
timeout 150 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py tests/test_fp8.py tests/test_launch.py \
    -q -p no:warnings -n 14 -rf -x \
    -k "(test_gluon_forward.py and defaults) or (test_gluon_backward.py and dkdv_matches_reference and registers) or test_fp8.py or test_launch.py" \
    2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
