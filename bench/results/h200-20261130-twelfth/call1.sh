# Device call 1 of the 2026-11-30 twelfth part (nvidia-h200), on branch measure-12 (main 073823e
# with the eleventh part's three unmeasured branches merged; each switch touches another kernel):
#  - dkdv-lse-prep: LSE_PREP (bwd_dkdv, asked for): fwd+bwd d64/d128 and nanoGPT;
#  - fwd-rowsum-mma: ROWSUM_MMA after PV (fwd, asked for): bf16 forward d64/d128 and nanoGPT;
#  - fp8-raw-max: the Gluon fp8 forward with RAW_MAX (its new default) against it off.
# Their GPU tests first; every timing beside SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-twelfth/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 150 python3 -m pytest tests/test_gluon_backward.py tests/test_triton_kernels.py tests/test_host_path.py \
    tests/test_gluon_forward.py tests/test_fp8.py -q -rf -n 12 -p no:cacheprovider \
    -k "lse_prep or preprocess or dlse or repeated or rowsum or fp8_forward_raw_max or raw_row or fp8_forward" \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
timeout 170 python3 bench/kernels.py --out "$OUT/lse" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 150 \
    --variant prep='{"bwd_dkdv": {"LSE_PREP": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
timeout 110 python3 bench/kernels.py --out "$OUT/rowsum" --dtype bf16 --hdim 64 128 --mode fwd --seqlens 1024 4096 \
    --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 --time-budget 95 \
    --variant rowsum='{"fwd": {"ROWSUM_MMA": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
timeout 90 python3 bench/kernels.py --out "$OUT/fp8" --dtype bf16 --hdim 128 --mode fwd --seqlens 4096 16384 \
    --no-nanogpt --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --rounds 3 --time-budget 75 \
    --variant fp8scaled='{"fwd": {"RAW_MAX": false}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
