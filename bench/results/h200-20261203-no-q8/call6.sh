# Device call 6 of this folder (nvidia-h200), 2026-12-03 (fifth session), at the commit that adds it:
# the counter by default on causal d65-128 GQA calls from 1k keys (calls 4-5). (1) GPU tests: the
# counter's defaults (a GQA 2 S1k case added), the tail, every GQA test of the dK/dV kernel, the
# persistent schedules; (2) fwd+bwd GQA 4 / GQA 2 d128 causal S1k, the new default against `rr`
# (the round-robin programs these calls had), 3 rounds, SDPA cuDNN and flash beside.
#   bash bench/results/h200-20261203-no-q8/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 300 python3 -m pytest tests/test_gluon_backward.py -m "not bigmem" -k "counter or heaviest or gqa or persistent_takes" \
    -q -p no:warnings -n 14 -rf 2>&1 | grep -v "Warn\|warner" | tail -12 | tee "$OUT/tests.txt"
RR='rr={"bwd_dkdv": {"DYNAMIC": false}}'
for g in 4 2; do
timeout 80 python3 bench/kernels.py --group $g --hdim 128 --seqlens 1024 --dtype bf16 --causal on --mode fwdbwd \
    --rounds 3 --backends fa_ck-triton sdpa-cudnn sdpa-flash --no-nanogpt --autograd-threads off \
    --variant "$RR" --out "$W/gqa$g" 2>&1 | grep "^gqa"
cp $W/gqa$g/results.md "$OUT/gqa$g.md"
done
rm -f $W/*/*.png
tar czf "$OUT/call6_all.tgz" -C "$OUT" w
