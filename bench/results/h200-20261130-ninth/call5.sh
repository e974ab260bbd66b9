# Device call 5 of the 2026-11-30 ninth part (nvidia-h200): after merging the host-time branch
# (repeated calls replay their recorded launches): the GPU tests of the default kernels (Gluon
# forward and backward, forward.py/backward.py large shapes, launch.py); then call5_replay.py
# (replay against the slow path, host time, S1024 timings with plans on / off, cuDNN beside).
#   bash bench/results/h200-20261130-ninth/call5.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$OUT/env.txt"
timeout 200 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py tests/test_triton_kernels.py tests/test_launch.py -m gpu -q -rf -p no:cacheprovider -n 12 \
    -k "not test_gluon_forward or defaults" > "$OUT/pytest.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -10
timeout 200 python3 bench/results/h200-20261130-ninth/call5_replay.py 2>&1 | grep -v Warn | tee "$OUT/replay.txt"
