# Device call 3 of the sixteenth part (nvidia-h200): fp8 calls of 16-bit inputs replay as plans
# (quantisation included; uncommitted on top of d3e3201, committed after as the code this call
# ran). Host time per call (bench/host.py, first, on an idle machine) for this code and for d387d92
# (old_d387d92/); the fp8 forward at d128 S512-16k beside fa_ck's bf16 forward, SDPA cuDNN and
# flash (one timing per point), and d387d92's fp8 at S1k / S4k in the same run; the fp8 tests.
#   bash bench/results/h200-20261201-sixteenth/call3.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 100 python3 bench/host.py --out "$W/host_new" 2>&1 | grep -v Warn | tail -2
PYTHONPATH=$PWD/old_d387d92/python timeout 100 python3 bench/host.py --out "$W/host_old" 2>&1 | grep -v Warn | tail -2
cat $W/host_new/results.md $W/host_old/results.md > "$OUT/host_new_old.md"
timeout 200 python3 bench/kernels.py --out "$W/fp8_new" --dtype bf16 --hdim 128 --mode fwd --causal both \
    --seqlens 512 1024 2048 4096 8192 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 1 \
    --no-nanogpt 2>&1 | grep -v Warn | tail -16
PYTHONPATH=$PWD/old_d387d92/python timeout 100 python3 bench/kernels.py --out "$W/fp8_old" --dtype bf16 --hdim 128 \
    --mode fwd --causal both --seqlens 1024 4096 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 1 \
    --no-nanogpt 2>&1 | grep -v Warn | tail -8
cp $W/fp8_new/results.md "$OUT/fp8_new.md"; cp $W/fp8_old/results.md "$OUT/fp8_old.md"
timeout 150 python3 -m pytest tests/test_fp8.py tests/test_gluon_forward.py -k "fp8 or replays" -q -p no:warnings \
    -n 8 -rf 2>&1 | grep -v "Warn\|warner" | tail -8 | tee "$OUT/fp8_tests.txt"
rm -f $W/*/*.png
tar czf "$OUT/call3_all.tgz" -C "$OUT" w
