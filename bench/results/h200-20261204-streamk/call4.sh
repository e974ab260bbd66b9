# Device call 4 of this folder (nvidia-h200), 2026-12-04 (fifteenth session): where STREAM_K's loss
# (call 3: -6 to -15 %) comes from. Three processes, each with its own cuDNN anchor: main's tree
# (defaults; STREAM_K as committed: the last one to two rounds split), and two copies of python/
# made for this call only (not committed) whose forward_gluon_loads._stream_range differs in one
# line: diag_A round_units = units (STREAM_K's code compiled, nothing split: what the code alone
# costs), diag_B round_units = units // programs * programs (only the last, partial round split).
#   bash bench/results/h200-20261204-streamk/call4.sh [ROUNDS]      (from the repo root)
set -uo pipefail
source bench/device_env.sh
PTS="d128-S4k-full d128-S4k-causal nanogpt d64-S4k-full"
for tree in python diag_A/python diag_B/python; do
    name=$(echo $tree | tr / _)
    PYTHONPATH=$PWD/$tree timeout 170 python3 bench/standing.py --rounds ${1:-3} --out "$OUT/standing_$name.jsonl" \
        --variant streamk='{"fwd": {"STREAM_K": true}}' --points $PTS 2>&1 | grep -v Warn | cut -c1-200 | tail -1
    echo "## $tree" | tee -a "$OUT/summary.md"
    python3 bench/standing.py --summarize "$OUT/standing_$name.jsonl" | grep -v flash | tee -a "$OUT/summary.md"
done
