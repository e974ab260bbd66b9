# Device call 3 of the eighteenth part (nvidia-h200), at 0584b4a: the Gluon forward's row max and row
# sum as trees (call 2's stall samples: FMNMX 13 % of the fp8 kernel's, 11 % of bf16's, waiting on
# a 32-deep chain per row). The Gluon forward's GPU tests in its default schedule (the fp8 ones at
# d64 now its default too); then the d128 forward (fa_ck bf16 and fp8, SDPA cuDNN and flash, S1k /
# 4k / 16k, causal or not, 3 rounds) with this code, then with 12c135b's python/ (old_tree/, an
# untracked copy: before the trees); d64 and the nanoGPT shape the same
# way, one round each.
#   bash bench/results/h200-20261201-eighteenth/call3.sh      (from the repo root, old_tree/ beside)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 150 python3 -m pytest tests/test_gluon_forward.py -k "defaults" -q -p no:warnings -n 14 -rf 2>&1 \
    | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
run() {   # $1: name, $2: python/ to use
  PYTHONPATH=$2 timeout 150 python3 bench/kernels.py --out "$W/d128_$1" --dtype bf16 --hdim 128 --mode fwd --causal both \
      --seqlens 1024 4096 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 3 --no-nanogpt 2>&1 \
      | grep "^bf16" | sed "s/^/$1 /"
  PYTHONPATH=$2 timeout 100 python3 bench/kernels.py --out "$W/d64_$1" --dtype bf16 --hdim 64 --mode fwd --causal both \
      --seqlens 1024 4096 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 1 2>&1 \
      | grep "^bf16\|nanoGPT" | sed "s/^/$1 /"
}
run new $PWD/python
run old $PWD/old_tree/python

for r in new old; do cp $W/d128_$r/results.md "$OUT/d128_$r.md"; done
rm -f $W/*/*.png
tar czf "$OUT/call3_all.tgz" -C "$OUT" w
