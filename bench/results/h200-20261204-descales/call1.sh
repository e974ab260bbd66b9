# Device call 1 of this folder (nvidia-h200), 2026-12-04 (tenth session): (1) standing.py, 3 rounds:
# fa_ck's fp8 forward kernel on its own quantisation (Q_CONVERT) against a caller's fp8 inputs with
# and without descales (the latter replaying on kept ones since d4178b3), beside cuDNN's bf16
# kernel, same process; (2) the whole fp8 GPU test selection (the ninth session's calls ran 14-50
# of its tests each).
#   bash bench/results/h200-20261204-descales/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-descales
timeout 150 python3 $D/standing.py 3 "$OUT/standing.jsonl" 2>&1 | grep -v Warn | cut -c1-400
timeout -s INT 400 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q -p no:warnings \
    -n 14 -rf --durations=8 -k "test_fp8.py or fp8" 2>&1 | grep -v "Warn\|warner\|_warn_once" | tail -30 | tee "$OUT/tests.txt"
