# Device call 6 of the sixteenth part (nvidia-h200), at 9c9c140: call 5's S512 fp8 points, settled:
# GPU time per kernel of one fp8 forward (fp8_profile.py) for this code and for a2e0959's tree
# (old_a2e0959/: six quantisation launches), then the fp8 forward at d128 S512 / S1024, 3 rounds,
# both trees, beside SDPA cuDNN and flash.
#   bash bench/results/h200-20261201-sixteenth/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 60 python3 bench/results/h200-20261201-sixteenth/fp8_profile.py 2>&1 | grep -v Warn | tee "$OUT/fp8_profile_new.txt"
PYTHONPATH=$PWD/old_a2e0959/python timeout 60 python3 bench/results/h200-20261201-sixteenth/fp8_profile.py 2>&1 \
    | grep -v Warn | tee "$OUT/fp8_profile_old.txt"
for tree in new old; do
  PP=$PWD/python; [ $tree = old ] && PP=$PWD/old_a2e0959/python
  PYTHONPATH=$PP timeout 80 python3 bench/kernels.py --out "$W/fp8_$tree" --dtype bf16 --hdim 128 --mode fwd \
      --causal both --seqlens 512 1024 --backends fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 3 --no-nanogpt 2>&1 \
      | grep -v Warn | grep "^bf16"
done
rm -f $W/*/*.png
tar czf "$OUT/call6_all.tgz" -C "$OUT" w
