# Device call 2 of this folder (nvidia-h200), 2026-12-04 (eleventh session), at main after 997877c
# (LAZY_MAX out): accuracy.py, the fp8 forward's error against float64 as the logits spread, beside
# its float64 emulation and the bf16 forwards (fa_ck's, SDPA cuDNN and flash).
#   bash bench/results/h200-20261204-lazy/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-lazy
timeout 400 python3 $D/accuracy.py "$OUT/accuracy.jsonl" 2>&1 | grep -v "Warn\|_warn_once" | tee "$OUT/accuracy.txt" | tail -24
