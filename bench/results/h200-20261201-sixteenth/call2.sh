# Device call 2 of the sixteenth part (nvidia-h200): bwd_preprocess zeroes ONE_PASS's dQ buffer
# (ZERO_DQ; one launch and a fill less per backward), uncommitted on top of d387d92 (committed after
# as the code this call ran). The GPU suite; host time per call, d387d92 (old_d387d92/, its python/
# tree) against this code, each beside SDPA cuDNN; autograd_probe.py (where a fwd+bwd's host time goes
# outside fa_ck's backend); per-kernel times at the short shapes; fwd+bwd at S512 / S1024 / nanoGPT,
# old against new, 3 rounds each, beside SDPA cuDNN and flash.
#   bash bench/results/h200-20261201-sixteenth/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 300 python3 -m pytest tests -m "gpu and not bigmem" -q -p no:warnings -n 12 -rf 2>&1 \
    | grep -v "Warn\|warner" | tail -15 | tee "$OUT/gpu_suite.txt"
PYTHONPATH=$PWD/old_d387d92/python timeout 100 python3 bench/host.py --out "$W/host_old" 2>&1 | tail -2
timeout 100 python3 bench/host.py --out "$W/host_new" 2>&1 | tail -2
timeout 80 python3 bench/results/h200-20261201-sixteenth/autograd_probe.py 2>&1 | grep -v Warn | tee "$OUT/autograd_probe.md"
timeout 90 python3 bench/results/h200-20261201-fifteenth/profile_short.py 2>&1 | grep -v Warn > "$OUT/profile_short.txt"
PYTHONPATH=$PWD/old_d387d92/python timeout 90 python3 bench/results/h200-20261201-fifteenth/profile_short.py 2>&1 \
    | grep -v Warn > "$W/profile_short_old.txt"
for tree in old new; do
  PP=$PWD/python; [ $tree = old ] && PP=$PWD/old_d387d92/python
  PYTHONPATH=$PP timeout 120 python3 bench/kernels.py --out "$W/short_$tree" --dtype bf16 --hdim 64 128 --mode fwdbwd \
      --causal both --seqlens 512 1024 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 2>&1 | grep -v Warn | tail -14
done
rm -f $W/*/*.png
cat $W/host_old/results.md $W/host_new/results.md > "$OUT/host_old_new.md"
tar czf "$OUT/call2_all.tgz" -C "$OUT" w
