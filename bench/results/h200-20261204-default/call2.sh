# Device call 2 of this folder (nvidia-h200), 2026-12-04 (twelfth session): timing, bench/standing.py,
# ROUNDS rounds (default 2): (1) the new default (F16_SCORES, EXP2_POLY 4, the f32 loop beside it) and
# the f32 scores (the old default); (2) with no_guard.patch applied (the f16 loop alone, as asked for
# before this session): the same default, and 256-key blocks (full calls; with the guard's f32 loop
# beside it they spill 136 bytes and ptxas serialises the wgmmas).
# Ran at 5b73521; no_guard.patch applies to that tree only (the f32 loop it takes out became the wide
# f16 step in 5b2968b):
#   git checkout 5b73521 && bash bench/results/h200-20261204-default/call2.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261204-default
R=${1:-2}
timeout 260 python3 bench/standing.py --rounds $R --out "$OUT/guard.jsonl" \
    --variant f32='{"fwd": {"F16_SCORES": false}}' 2>&1 | grep -v Warn | cut -c1-200 | tail -20
(git apply $D/no_guard.patch 2>/dev/null || patch -p1 < $D/no_guard.patch) && echo "no_guard.patch applied"
timeout 200 python3 bench/standing.py --rounds $R --out "$OUT/no_guard.jsonl" \
    --variant bn256='{"fwd": {"BLOCK_N": 256}}' --points d128-S4k-full d128-S16k-full d64-S4k-full 2>&1 \
    | grep -v Warn | cut -c1-200 | tail -20
git apply -R $D/no_guard.patch 2>/dev/null || patch -R -p1 < $D/no_guard.patch
python3 bench/standing.py --summarize "$OUT/guard.jsonl" | tee "$OUT/summary.md"
python3 bench/standing.py --summarize "$OUT/no_guard.jsonl" | tee -a "$OUT/summary.md"
