# Device call 2 of the 2026-11-30 eleventh part (nvidia-h200): GPU tests of the Gluon forward with
# the softmax's new forms (RAW_MAX: row max of raw scores; ROWSUM_MMA: row sums by wgmma), then the
# forward at d64/d128 with them asked for (and ping-pong), SDPA cuDNN and flash in the same run.
#   bash bench/results/h200-20261130-eleventh/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 200 python3 -m pytest tests/test_gluon_forward.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -8
G='"GLUON": true'
timeout 300 python3 bench/kernels.py --out "$OUT/fwd" --dtype bf16 --hdim 64 128 --mode fwd \
    --seqlens 1024 4096 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 280 \
    --variant raw="{\"fwd\": {$G, \"RAW_MAX\": true}}" --variant rowsum="{\"fwd\": {$G, \"ROWSUM_MMA\": true}}" \
    --variant both="{\"fwd\": {$G, \"RAW_MAX\": true, \"ROWSUM_MMA\": true}}" \
    --variant bothpp="{\"fwd\": {$G, \"RAW_MAX\": true, \"ROWSUM_MMA\": true, \"PINGPONG\": true}}" \
    2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
