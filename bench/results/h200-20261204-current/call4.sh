# Device call 4 of this folder (nvidia-h200), 2026-12-04 (sixteenth session): fp8's error on a
# trained model's q, k and v (bench/fp8_trained.py: nanoGPT 124M trained 200 steps with sdpa (the main job's length; call 3's 1000 steps, 7 passes over the corpus, memorised it: train loss 0.50),
# every layer's q, k, v on 16 validation sequences), beside fa_ck's and SDPA's bf16 forwards and
# fp8 on N(0, 1) inputs of the same shape, all against float64.
#   bash bench/results/h200-20261204-current/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 560 python3 bench/fp8_trained.py --steps 200 --out "$OUT/fp8_trained" 2>&1 | grep -v Warn | tail -30
