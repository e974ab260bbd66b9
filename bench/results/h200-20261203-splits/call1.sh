# Device call 1 of this folder (nvidia-h200), 2026-12-03 (third session): the tree after the moves of this part
# (fp8 input preparation into quantize.py; gluon_common.py and dq_gluon.py out of the Gluon forward and
# backward; the kernels' PTX identical on the CPU): the GPU tests that reach the moved code, then GQA's
# standing (bench/kernels.py --group 4, d128 and d64 at 4k keys, fwd and fwd+bwd, cuDNN and flash beside).
#   bash bench/results/h200-20261203-splits/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
run() {  # name, limit, pytest args...
  local name=$1 limit=$2; shift 2
  timeout "$limit" python3 -m pytest "$@" -v -p no:warnings -rf -n 16 2>&1 | grep -v "Warn\|warner" > "$OUT/$name.txt"
  echo "$name: PASSED $(grep -c ' PASSED ' "$OUT/$name.txt") FAILED $(grep -c ' FAILED ' "$OUT/$name.txt")" \
       "SKIPPED $(grep -c ' SKIPPED ' "$OUT/$name.txt") | $(tail -1 "$OUT/$name.txt")"
}
run fp8_host_launch 70 tests/test_fp8.py tests/test_launch.py tests/test_host_path.py
run gluon_dq 130 tests/test_gluon_backward.py -m "gpu and not bigmem" -k "dq_"
run gluon_fwd 80 tests/test_gluon_forward.py -m "gpu and not bigmem" \
    -k "windows or varlen or graph_capture or fp8_inputs or short_causal"
timeout 100 python3 bench/kernels.py --group 4 --hdim 128 64 --seqlens 4096 --dtype bf16 --mode both --rounds 2 \
    --backends fa_ck-triton sdpa-cudnn sdpa-flash --no-nanogpt --autograd-threads off --out "$OUT/gqa" 2>&1 | tail -14
