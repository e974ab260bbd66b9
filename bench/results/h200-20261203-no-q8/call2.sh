# Device call 2 of this folder (nvidia-h200), 2026-12-03 (fifth session), at the commit that adds it:
# TAIL_LPT (new, default on): the dK/dV kernel's counter deals the last heads' units heaviest first
# across them (call 1's counters: the SMs idle 22 % of the GQA d128 causal dK/dV kernel, the tail).
# (1) GPU tests: the tail (12 / 5 / 132 SMs seen), the counter's and persistent schedules, the
#     DYNAMIC asks of the reference comparisons;
# (2) fwd+bwd under a causal mask, GQA 4 (d64 Hq32/Hkv8, d128 Hq16/Hkv4) at S2k / S4k / S8k and
#     plain attention at S4k, the default against `notail` (TAIL_LPT off), 3 rounds, SDPA cuDNN
#     and flash beside;
# (3) Nsight Compute again on call 1's backwards (ncu_gqa.py, TAIL_LPT on): SM active cycles
#     against elapsed.
#   bash bench/results/h200-20261203-no-q8/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
timeout 200 python3 -m pytest tests/test_gluon_backward.py -m "not bigmem" \
    -k "heaviest or counter_by_default or persistent_takes or (matches_reference and dynamic) or (windows_and_varlen and dynamic)" \
    -q -p no:warnings -n 14 -rf 2>&1 | grep -v "Warn\|warner" | tail -12 | tee "$OUT/tests.txt"
NOTAIL='notail={"bwd_dkdv": {"TAIL_LPT": false}}'
timeout 190 python3 bench/kernels.py --group 4 --hdim 64 128 --seqlens 2048 4096 8192 --dtype bf16 --causal on \
    --mode fwdbwd --rounds 3 --backends fa_ck-triton sdpa-cudnn sdpa-flash --no-nanogpt --autograd-threads off \
    --variant "$NOTAIL" --out "$W/gqa" 2>&1 | grep -v Warn | tail -9
cp $W/gqa/results.md "$OUT/gqa.md"
timeout 90 python3 bench/kernels.py --hdim 64 128 --seqlens 4096 --dtype bf16 --causal on \
    --mode fwdbwd --rounds 3 --backends fa_ck-triton sdpa-cudnn sdpa-flash --no-nanogpt --autograd-threads off \
    --variant "$NOTAIL" --out "$W/mha" 2>&1 | grep -v Warn | tail -5
cp $W/mha/results.md "$OUT/mha.md"
timeout 120 ncu --profile-from-start off --clock-control none --target-processes all --kernel-name regex:"bwd_dkdv" \
    --section SpeedOfLight --section LaunchStats --print-details all \
    python3 bench/results/h200-20261203-no-q8/ncu_gqa.py > "$W/ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "profiled|==ERROR==|Duration|SM Active Cycles|Elapsed Cycles" "$W/ncu.txt" | tee "$OUT/ncu_summary.txt"
rm -f $W/*/*.png
tar czf "$OUT/call2_all.tgz" -C "$OUT" w
