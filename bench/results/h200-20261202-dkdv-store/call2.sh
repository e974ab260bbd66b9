# Device call 2 of this folder (nvidia-h200, 2026-12-02; call 5 of the session): the Gluon dQ kernel's dQ
# by a TMA store through each warpgroup's rows of Q's tile (TMA_STORE, on in the tree run) - its GPU tests
# (the dQ kernel's and every past-d128 backward's, 16 at a time), its backward GPU time against plain
# stores (`dqplain`) at d256 - then bench/kernels.py's short fwd+bwd points with autograd's
# multithreading off, SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261202-dkdv-store/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=bench/results/h200-20261202-dkdv-store
timeout 150 python3 -m pytest tests/test_gluon_backward.py -m "gpu and not bigmem" -k "dq or past_d128" -q \
    -p no:warnings -n 16 -rf 2>&1 | grep -v "^\s*$" | grep -v "Warn\|warner" | tail -6 | tee "$OUT/tests.txt"
POINTS='[[32,8,512,256,true],[32,8,512,256,false],[16,8,1024,256,true],[4,8,4096,256,false]]' \
    timeout 100 python3 $D/bwd_time.py dqplain='{"bwd_dq": {"TMA_STORE": false}}' 2>&1 | grep -v Warn \
    > "$OUT/bwd_time.txt"; grep '^|' "$OUT/bwd_time.txt"
timeout 200 python3 bench/kernels.py --out "$OUT/k" --dtype bf16 --hdim 64 128 256 --mode fwdbwd --causal both \
    --seqlens 512 1024 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 160 \
    --autograd-threads off 2>&1 | grep "^bf16\|^nanogpt\|MISSED\|met" | tail -16
rm -f "$OUT"/k/*.png
