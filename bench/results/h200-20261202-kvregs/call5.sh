# Device call 5 of this folder (nvidia-h200), written 2026-12-02 (seventh part), not run: no device time
# was left. LSE_PREP at d128 (the dK/dV kernel reads bwd_preprocess's lse / scale rather than converting
# lse per query block). In main's d128 SASS (Triton 3.6, sm90, S4096 full) both consumer warpgroups load
# the next block's lse and delta (16 LDG) and convert them (FSETP / FMUL / FSEL) *before* they issue the
# dQ multiply: its accumulator's registers hold the loads first, so the dQ wgmma waits for a round trip
# to L2 on every query block, both warpgroups at once (they meet at ds_full each block). With LSE_PREP
# the dQ wgmma issues 16 instructions after the ds_full wait and the loads run under it; the loop's SASS
# is 15 % shorter (3178 -> 2706 lines), spills unchanged under 3.6 (8 bytes full, 40 causal). Measured
# -6 to +3 % on 2026-11-30 (twelfth part, call 1), with other kernels. Here: the backward's GPU time
# with the host hidden, `prep` against the default at d128, S512-16k, causal and full; then, if it wins,
# set configs.switches' LSE_PREP for d128 too (and test_dkdv_lse_prep_up_to_d64).
#   bash bench/results/h200-20261202-kvregs/call5.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
B=$PWD/bench/results/h200-20261202-dkdv-store
export POINTS='[[32,16,512,128,true],[32,16,512,128,false],[16,16,1024,128,true],[16,16,1024,128,false],
  [4,16,4096,128,true],[4,16,4096,128,false],[1,16,16384,128,true],[1,16,16384,128,false]]'
timeout 250 python3 $B/bwd_time.py prep='{"bwd_dkdv": {"LSE_PREP": true}}' 2>&1 | grep -v Warn > "$OUT/bwd_time.txt"
grep '^|' "$OUT/bwd_time.txt"
