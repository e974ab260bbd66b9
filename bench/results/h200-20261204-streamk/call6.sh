# Device call 6 of this folder (nvidia-h200), 2026-12-04 (fifteenth session): SCHEDULE (causal tiles
# dealt by the host, tile_schedule.py; asked on beside main's default, off). Its GPU test (out and
# lse bit for bit the round-robin's), then the fp8 forward's standing on causal points and the bf16
# forward at d64 / d128 S4k causal and nanoGPT's shape, each beside SDPA cuDNN in the same run.
#   bash bench/results/h200-20261204-streamk/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_tile_schedule.py -q -p no:warnings -rf 2>&1 | tail -8 | tee "$OUT/pytest.txt"
timeout 200 python3 bench/standing.py --rounds 3 --out "$OUT/standing.jsonl" --variant sched='{"fwd": {"SCHEDULE": true}}' \
    --points d128-S4k-causal d128-S8k-causal d128-S16k-causal d64-S4k-causal nanogpt 2>&1 | grep -v Warn \
    | cut -c1-200 | tail -1
python3 bench/standing.py --summarize "$OUT/standing.jsonl" | grep -v flash | tee "$OUT/summary.md"
timeout 150 python3 bench/kernels.py --dtype bf16 --hdim 64 128 --seqlens 4096 --causal on --mode fwd \
    --backends fa_ck-triton sdpa-cudnn --variant sched='{"fwd": {"SCHEDULE": true}}' --rounds 3 \
    --time-budget 120 --out "$OUT/bf16" 2>&1 | grep -v Warn | tail -12
