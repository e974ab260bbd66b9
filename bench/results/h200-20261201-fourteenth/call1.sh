# Device call 1 of the fourteenth part (nvidia-h200): XTILE (forward_gluon.py: a tile's last PV
# multiply and epilogue under the next tile's first softmax, two Q buffers) on the GPU for the
# first time: the Gluon forward's GPU tests (two XTILE schedules among them) and the thirteenth
# part's untried DYNAMIC replay / CUDA-graph test; then the forward at d64 / d128, 1k-16k, causal
# or not, and the nanoGPT shape, XTILE against main's defaults beside SDPA cuDNN and flash.
# Ran at commit 7d4e95e (XTILE was measured slower everywhere here and reverted in the next commit:
# `git checkout 7d4e95e` to run it again).
#   bash bench/results/h200-20261201-fourteenth/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 230 python3 -m pytest tests/test_gluon_forward.py \
    tests/test_gluon_backward.py::test_dynamic_dkdv_replays_and_graphs_start_their_counter_afresh \
    -q -rf -n 12 -p no:cacheprovider -m gpu > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -12
timeout 200 python3 bench/kernels.py --out "$OUT/fwd" --dtype bf16 --hdim 64 128 --mode fwd \
    --seqlens 1024 4096 16384 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 5 --time-budget 185 \
    --variant xtile='{"fwd": {"XTILE": true}}' 2>&1 | grep -v Warn | grep "^\[\|MISS\|met"
rm -f "$OUT"/*/*.png
