# Device call 1 (nvidia-h200), 2026-12-02: the direct launch path (driver_launch.py) on a GPU.
#   bash bench/results/h200-20261202-direct/call1.sh      (from the repo root)
# 1. its GPU tests, the launch and host-path tests beside them;
# 2. bench/host.py with FA_CK_DIRECT_LAUNCH=0 (Triton's launcher for replays) and =1, twice each,
#    alternately: host and GPU time per call, back to back, with cuDNN in every run.
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_driver_launch.py tests/test_launch.py tests/test_host_path.py -m gpu -q \
    -p no:warnings -rf 2>&1 | grep -v "^\s*$" | tail -15 | tee "$OUT/tests.txt"
for round in 1 2; do
  for direct in 0 1; do
    echo "== round $round FA_CK_DIRECT_LAUNCH=$direct ==" | tee -a "$OUT/host.md"
    FA_CK_DIRECT_LAUNCH=$direct timeout 150 python3 bench/host.py --out /tmp/host_${round}_${direct} > /tmp/host_${round}_${direct}.log 2>&1
    cat /tmp/host_${round}_${direct}/results.md >> "$OUT/host.md" || tail -20 /tmp/host_${round}_${direct}.log | tee -a "$OUT/host.md"
  done
done
python3 - <<'PY' | tee "$OUT/summary.txt"
import json
rows = {}
for r in (1, 2):
    for d in (0, 1):
        for row in json.load(open(f"/tmp/host_{r}_{d}/results.json"))["rows"]:
            rows.setdefault((row["shape"], row["call"]), {})[(r, d)] = (row["host_us"], row["gpu_us"])
print("| shape | call | r1 triton host/gpu | r1 direct host/gpu | r2 triton | r2 direct |")
for (shape, call), v in rows.items():
    print(f"| {shape} | {call} | " + " | ".join(f"{v[k][0]:.0f} / {v[k][1]:.0f}" if k in v else "-" for k in ((1, 0), (1, 1), (2, 0), (2, 1))) + " |")
PY
