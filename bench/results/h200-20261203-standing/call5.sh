# Device call 5 of this folder (nvidia-h200), 2026-12-03. (1) The GPU tests of the two files the eighth part's
# calls 7-8 ran that their selection left out (`dq_` and `fp8`, 147 tests). (2) The d128 dK/dV grid where the
# sweeps (calls 3-4) put fwd+bwd lowest: causal S2048 (0.96x bf16; the counter's default starts at 4k keys).
# Backward GPU time with the host hidden (bwd_time.py), the default against units from the counter
# (`dynamic`: host-made descriptors, persistent, DYNAMIC) and one program per unit (`static`, host-made
# descriptors). (3) Every backend of bench/kernels.py in one run (autotune on and off, fp8, SDPA's four,
# FlexAttention compiled, naive) at d128 S4096 causal, fwd and fwd+bwd, one timing each, on a fresh
# autotune cache (autotune last ran on the H200 on 2026-11-29, before the Gluon kernels); then a second
# process on the same cache: first_call_s shows whether it searched again.
#   bash bench/results/h200-20261203-standing/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 90 python3 -m pytest tests/test_gluon_backward.py tests/test_triton_kernels.py -m "gpu and not bigmem" \
    -k "dq_ or fp8" -q -p no:warnings -n 12 -rf 2>&1 | grep -v "Warn\|warner" > "$OUT/tests.txt"
tail -c 1500 "$OUT/tests.txt"
B=$PWD/bench/results/h200-20261202-dkdv-store
POINTS='[[8,16,2048,128,true],[4,16,4096,128,true]]' \
    timeout 60 python3 $B/bwd_time.py dynamic='{"bwd_dkdv": {"HOST_DESC": true, "PERSISTENT": true, "DYNAMIC": true}}' \
    static='{"bwd_dkdv": {"HOST_DESC": true, "PERSISTENT": false, "DYNAMIC": false}}' 2>&1 | grep -v Warn > "$OUT/bwd_time.txt"
grep '^|' "$OUT/bwd_time.txt"
export FA_CK_CACHE_DIR=/tmp/fa_ck_cache; rm -rf $FA_CK_CACHE_DIR
timeout 170 python3 bench/kernels.py --out "$OUT/all" --dtype bf16 --hdim 128 --mode both --causal on \
    --seqlens 4096 --no-nanogpt --rounds 1 --time-budget 150 2>&1 | grep -v Warn | grep "rows"
timeout 50 python3 bench/kernels.py --out "$OUT/again" --dtype bf16 --hdim 128 --mode both --causal on \
    --seqlens 4096 --no-nanogpt --backends fa_ck-triton-autotune sdpa-cudnn --rounds 1 2>&1 | grep -v Warn | grep "rows"
for f in all again; do python3 -c "import json,sys; [print('$f', r['point'], r['mode'], r['backend'], 'first_call_s', r.get('first_call_s'), 'x', r.get('ratio_cudnn')) for r in json.load(open(sys.argv[1]))['points'] if r['backend'].startswith('fa_ck-triton')]" "$OUT/$f/results.json"; done
cp $FA_CK_CACHE_DIR/*.json "$OUT/autotune_cache.json"
rm -f "$OUT"/*/*.png "$OUT"/*/results.json "$OUT"/bwd_time.json   # (8 files come back at most)
