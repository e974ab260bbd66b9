# Device call 4 of the 2026-11-30 thirteenth part (nvidia-h200): where the time goes -- the
# nanoGPT shape's fwd+bwd per kernel beside SDPA cuDNN and flash (torch.profiler), and the fp8
# quantisation's two kernels at other tile heights and warp counts (do_bench).
#   bash bench/results/h200-20261130-thirteenth/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 120 python3 bench/results/h200-20261130-thirteenth/nanogpt_split.py 2>&1 | grep -v Warn | tee "$OUT/nanogpt_split.txt"
timeout 120 python3 bench/results/h200-20261130-thirteenth/quantize_tiles.py 2>&1 | tee "$OUT/quantize_tiles.txt"
