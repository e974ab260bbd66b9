# Device call 2 (nvidia-h200), 2026-12-02: the direct launch path under the GPU tests that call
# one signature several times (CUDA graphs, fp8 replays, the API), then bench/kernels.py at the
# short points and nanoGPT's shape with FA_CK_DIRECT_LAUNCH=1 (the default) and =0, each run with
# SDPA cuDNN and flash beside fa_ck (3 rounds, interleaved, median).
#   bash bench/results/h200-20261202-direct/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 240 python3 -m pytest tests/test_driver_launch.py tests/test_launch.py tests/test_gpu_scale.py tests/test_fp8.py \
    tests/test_api.py tests/test_host_path.py -m "gpu and not bigmem" -q -p no:warnings -n 8 -rf 2>&1 \
    | grep -v "^\s*$" | tail -12 | tee "$OUT/tests.txt"
timeout 120 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py -k "graph" -m gpu -q \
    -p no:warnings -rf 2>&1 | grep -v "^\s*$" | tail -5 | tee -a "$OUT/tests.txt"
for direct in 1 0; do
  FA_CK_DIRECT_LAUNCH=$direct timeout 170 python3 bench/kernels.py --out /tmp/k$direct --dtype bf16 --hdim 64 128 256 \
      --mode both --causal both --seqlens 512 1024 --backends fa_ck-triton sdpa-cudnn sdpa-flash --rounds 3 \
      --time-budget 150 2>&1 | grep "^bf16\|^nanogpt" | sed "s/^/direct=$direct /"
  cp /tmp/k$direct/results.md "$OUT/direct$direct.md"; cp /tmp/k$direct/results.json "$OUT/direct$direct.json"
done
