# Device call 1 of the sixteenth part (nvidia-h200), at d387d92's kernels with bench/host.py's
# breakdown reaching into Triton's launcher: host time per call beside SDPA cuDNN and where fa_ck's
# goes (forward alone and fwd+bwd); the two GQA test cases never run on a GPU; bench/kernels.py
# --group 4 once (GQA sweep, never run on a GPU).
#   bash bench/results/h200-20261201-sixteenth/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 120 python3 bench/host.py --out "$OUT/host" 2>&1 | grep -v Warn | tail -40
timeout 150 python3 -m pytest tests/test_gluon_backward.py -m gpu -k "gqa_windows_and_schedules" -q -p no:warnings \
    -rf -n 8 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/gqa_tests.txt"
timeout 200 python3 bench/kernels.py --out "$OUT/gqa" --dtype bf16 --hdim 128 --mode both --causal both \
    --seqlens 1024 4096 --group 4 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 1 --no-nanogpt 2>&1 \
    | grep -v Warn | tail -30
