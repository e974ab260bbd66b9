# Device call 1 of the 2026-11-30 eleventh part (nvidia-h200), on branch own-dq (main + OWN_DQ +
# EXP2_EMU, both asked-for switches, off by default): GPU tests of both; the d64 forward with the
# Gluon kernel asked for and its variants (exponentials partly on the FMA pipe, ping-pong);
# fwd+bwd with OWN_DQ. SDPA cuDNN and flash in the same runs.
#   bash bench/results/h200-20261130-eleventh/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 170 python3 -m pytest tests/test_gluon_backward.py tests/test_gluon_forward.py -m gpu -q -rf -p no:cacheprovider \
    -n 12 -k "(dkdv and own_dq) or exp2" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
G='"GLUON": true'
timeout 180 python3 bench/kernels.py --out "$OUT/fwd" --dtype bf16 --hdim 64 --mode fwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 165 \
    --variant gl="{\"fwd\": {$G}}" --variant emu2="{\"fwd\": {$G, \"EXP2_EMU\": 2}}" \
    --variant emu4="{\"fwd\": {$G, \"EXP2_EMU\": 4}}" --variant emu4pp="{\"fwd\": {$G, \"EXP2_EMU\": 4, \"PINGPONG\": true}}" \
    --variant pp="{\"fwd\": {$G, \"PINGPONG\": true}}" 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
timeout 180 python3 bench/kernels.py --out "$OUT/fwdbwd" --dtype bf16 --hdim 64 128 --mode fwdbwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 165 \
    --variant owndq='{"bwd_dkdv": {"OWN_DQ": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
