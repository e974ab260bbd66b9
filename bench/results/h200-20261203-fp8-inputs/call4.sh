# Device call 4 of this folder (nvidia-h200), 2026-12-03 (ninth session), main: the producer warp
# negates a tile's q rows where a caller's descales multiply to a negative scale
# (forward_gluon_loads._copy_q_signed), not the consumers (call 3: their code beside the loop cost
# 4-6 % on full calls). (1) GPU tests of fp8 inputs and descales (the negative ones among them),
# the fp8 replays; (2) negate_ab.py on the tree (C) and on call 3's B (to_b.patch: the consumers
# without negation, the producer as before), C then B. (Cut to fit 343 s of device time left after
# a refused start.)
#   bash bench/results/h200-20261203-fp8-inputs/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261203-fp8-inputs
timeout -s INT 110 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py tests/test_host_path.py -q -p no:warnings \
    -n 14 -rf -k "descales_of_any_sign or fp8_inputs_float32_out or replays_bit_for_bit or fp8_forward_raw_max or fp8_forward_negative_scale" 2>&1 \
    | grep -v "Warn\|warner\|_warn_once" | tail -12 | tee "$OUT/tests.txt"
for round in 1; do
  timeout 100 python3 $D/negate_ab.py C "$OUT/negate_ab.jsonl" 2>&1 | grep -v Warn
  git apply $D/to_b.patch && timeout 100 python3 $D/negate_ab.py B "$OUT/negate_ab.jsonl" 2>&1 | grep -v Warn
  git apply -R $D/to_b.patch
done
