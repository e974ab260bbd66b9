# Device call 1 of this folder (nvidia-h200), 2026-12-03 (second session). Where the d128 causal dK/dV
# grid should start taking its units from the atomic counter (configs.dkdv_dynamic_wins: from 4k keys
# now; call 5 of h200-20261203-standing measured +1.8 % at S2048, one run). (1) Backward GPU time,
# host hidden (bwd_time.py), d128 causal S1024 / 2048 / 3072 / 4096, default against `dynamic` (the
# counter) and `static` (one program per unit), bf16 and fp16, each run twice. (2) fwd+bwd and fwd
# through bench/kernels.py at d128 causal S1024-4096 with the `dynamic` variant beside the default
# and SDPA cuDNN, bf16 and fp16, 5 interleaved rounds (the sweeps put fp16 S4k causal fwd+bwd at
# 0.945x and S2048 at 0.94x).
#   bash bench/results/h200-20261203-threshold/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
B=$PWD/bench/results/h200-20261202-dkdv-store
DYN='{"bwd_dkdv": {"HOST_DESC": true, "PERSISTENT": true, "DYNAMIC": true}}'
STA='{"bwd_dkdv": {"HOST_DESC": true, "PERSISTENT": false, "DYNAMIC": false}}'
export POINTS='[[16,16,1024,128,true],[8,16,2048,128,true],[5,16,3072,128,true],[4,16,4096,128,true]]'
for dt in bfloat16 float16; do for run in 1 2; do
    DTYPE=$dt timeout 100 python3 $B/bwd_time.py dynamic="$DYN" static="$STA" 2>&1 | grep -v Warn > "$OUT/bwd_${dt}_$run.txt"
    echo "== $dt run $run"; grep '^|' "$OUT/bwd_${dt}_$run.txt"
done; done
timeout 300 python3 bench/kernels.py --out "$OUT/kernels" --dtype bf16 fp16 --hdim 128 --mode both --causal on \
    --seqlens 1024 2048 3072 4096 --no-nanogpt --backends fa_ck-triton sdpa-cudnn --variant dynamic="$DYN" \
    --rounds 5 --time-budget 280 2>&1 | grep -v Warn | tail -3
grep '^|' "$OUT/kernels/results.md" | head -40
rm -f "$OUT"/kernels/*.png
