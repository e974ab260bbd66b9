# Device call 2 of this folder (nvidia-h200), 2026-12-03 (sixth session), at the commit that adds it:
# (1) GPU tests of fp8_buffers carved from one allocation: test_fp8.py, test_host_path.py, test_launch.py whole;
# (2) host_ab.py: host time per replayed call, one allocation against the four of before (swapped in), same run;
# (3) timeline.py again for the fp8 and bf16 defaults at both shapes, all marks kept (marks.pt).
#   bash bench/results/h200-20261203-timeline/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 240 python3 -m pytest tests/test_fp8.py tests/test_host_path.py tests/test_launch.py -m "not bigmem" \
    -q -p no:warnings -n 12 -rf 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
timeout 120 python3 bench/results/h200-20261203-timeline/host_ab.py 2>&1 | grep -v Warn | tail -14
timeout 150 python3 bench/results/h200-20261203-timeline/timeline.py --out "$OUT" --variants fp8,bf16 2>&1 | grep -v Warn | tail -6
