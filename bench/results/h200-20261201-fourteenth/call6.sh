# Device call 6 of the fourteenth part (nvidia-h200): call 5 again, the Gluon forward now reachable at head dim 256
# (call 5 never reached it: _tma_ok refused head dims over 128; uncommitted change: _gluon_ok allows 256).
# (main's code: no default changed): correctness against the float64 reference (d256_check.py),
# then the d256 forward, 1k-16k, with 64-key blocks (2-deep rings) and 32-key blocks (3-deep)
# against main's default there (forward.py), beside SDPA cuDNN and flash.
#   bash bench/results/h200-20261201-fourteenth/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 90 python3 bench/results/h200-20261201-fourteenth/d256_check.py 2>&1 | grep -v Warn | tee "$OUT/d256_check.txt" | tail -25
timeout 100 python3 bench/kernels.py --out "$OUT/d256" --dtype bf16 --hdim 256 --mode fwd --no-nanogpt \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 70 \
    --variant g64='{"fwd": {"GLUON": true, "BLOCK_N": 64}}' \
    --variant g32='{"fwd": {"GLUON": true, "BLOCK_N": 32, "num_stages": 3}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
