# Device call 3 of this folder (nvidia-h200), 2026-12-03 (ninth session), main: is a caller's fp8
# forward kernel 4-5 % slower than fa_ck's own at S16k full (calls 1-2: 2373.7 / 2385.4 us against
# 2271.3 / 2275.2) because of _negate_q's code beside the loop (ptxas schedules the loop
# differently with it; the loop's instructions are the same)? negate_ab.py on the tree (A) and
# with no_negate.patch (B), A B A B, each with cuDNN's kernel in the same process.
#   bash bench/results/h200-20261203-fp8-inputs/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261203-fp8-inputs
for round in 1 2; do
  timeout 100 python3 $D/negate_ab.py A "$OUT/negate_ab.jsonl" 2>&1 | grep -v Warn
  git apply $D/no_negate.patch && timeout 100 python3 $D/negate_ab.py B "$OUT/negate_ab.jsonl" 2>&1 | grep -v Warn
  git apply -R $D/no_negate.patch
done
