# Device call 2 of this folder (nvidia-h200), 2026-12-04 (tenth session). Call 1 had fa_ck's own
# quantising fp8 kernel 3-14 % slower than the same kernel on a caller's fp8 inputs in rounds 1-2
# (3 % in round 0). (1) standing_ab.py, 4 rounds: Q_CONVERT on ("own") and off ("own, q8"), fp8
# inputs, cuDNN, order rotated, clocks read; (2) the GPU tests call 1 failed (the slow path's peak
# memory, mended in 92d7f8d) and the new fp8-inputs replay tests.
#   bash bench/results/h200-20261204-descales/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-descales
(cd $D && timeout 200 python3 standing_ab.py 4 "$OUT/standing_ab.jsonl" 2>&1 | grep -v Warn | cut -c1-300)
timeout -s INT 120 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q -p no:warnings \
    -n 14 -rf -k "makes_no_q8 or replays_bit_for_bit or q_converted_in_the_kernel or descales_of_any_sign or fp8_inputs_with_descales" 2>&1 \
    | grep -v "Warn\|warner\|_warn_once" | tail -12 | tee "$OUT/tests.txt"
