# Device call 4 (nvidia-h200), 2026-12-02: the backward's temporaries in one allocation (working
# tree, commit "Backward temporaries in one allocation") against old/ (39c9203's python/: direct
# launches, separate allocations): the direct-launch and replay GPU tests on the new tree, then
# bench/host.py old / new / old / new.
#   rm -rf old && mkdir old && git archive 39c9203 python | tar -x -C old
#   bash bench/results/h200-20261202-direct/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_driver_launch.py tests/test_launch.py tests/test_gpu_scale.py \
    -m "gpu and not bigmem" -q -p no:warnings -n 8 -rf 2>&1 | grep -v "^\s*$" | tail -8 | tee "$OUT/tests.txt"
timeout 120 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py -k "graph" -m gpu -q \
    -p no:warnings -rf 2>&1 | grep -v "^\s*$" | tail -4 | tee -a "$OUT/tests.txt"
for round in 1 2; do
  for tree in old new; do
    P=$PWD/python; [ $tree = old ] && P=$PWD/old/python
    echo "== round $round $tree ==" >> "$OUT/host.md"
    PYTHONPATH=$P timeout 150 python3 bench/host.py --out /tmp/h_${round}_$tree > /tmp/h_${round}_$tree.log 2>&1
    cat /tmp/h_${round}_$tree/results.md >> "$OUT/host.md" || tail -20 /tmp/h_${round}_$tree.log >> "$OUT/host.md"
  done
done
python3 - <<'PY' | tee "$OUT/summary.txt"
import json
rows, pieces = {}, {}
for r in (1, 2):
    for t in ("old", "new"):
        d = json.load(open(f"/tmp/h_{r}_{t}/results.json"))
        for row in d["rows"]:
            rows.setdefault((row["shape"], row["call"]), {})[(r, t)] = (row["host_us"], row["gpu_us"])
        pieces[(r, t)] = d["breakdown"]["fa_ck fwd+bwd"]
print("| shape | call | r1 old host/gpu | r1 new | r2 old | r2 new |")
print("|---|---|---|---|---|---|")
for (shape, call), v in rows.items():
    print(f"| {shape} | {call} | " + " | ".join(f"{v[k][0]:.0f} / {v[k][1]:.0f}" if k in v else "-" for k in ((1, "old"), (1, "new"), (2, "old"), (2, "new"))) + " |")
print("\nfwd+bwd breakdown at the tiny shape, us per call:")
print("| piece | r1 old | r1 new | r2 old | r2 new |")
print("|---|---|---|---|---|")
for label in pieces[(1, "new")]:
    print(f"| {label} | " + " | ".join(str(pieces[k].get(label, "-")) for k in ((1, "old"), (1, "new"), (2, "old"), (2, "new"))) + " |")
PY
