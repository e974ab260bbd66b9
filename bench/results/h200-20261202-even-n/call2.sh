# Device call 2 (nvidia-h200), 2026-12-02, fifth part: EVEN_N for the fp8 forward too (the Gluon fp8 kernel
# shares _step): the fp8 GPU tests; bench/kernels.py's fp8 forward at d128 (S1k / 4k / 16k, full and
# causal, 3 rounds), this tree then main's (`head_python/`), each beside cuDNN's bf16 forward in its own
# run; then issue 6's standing with EVEN_N (bench/kernels.py --quick, 5 rounds, autograd's multithreading off).
#   bash bench/results/h200-20261202-even-n/call2.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-even-n
timeout 150 python3 -m pytest tests/test_gluon_forward.py tests/test_fp8.py -q -p no:warnings -m gpu -n 16 -rf \
    -k "fp8 or even_keys" 2>&1 | grep -v "^\s*$" | tail -6 | tee "$OUT/tests.txt"
for t in even main; do
  tree=$PWD/python; [ $t = main ] && tree=$D/head_python
  PYTHONPATH=$tree timeout 110 python3 bench/kernels.py --out "$OUT/fp8_$t" --dtype bf16 --hdim 128 --causal both \
      --mode fwd --seqlens 1024 4096 16384 --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn --rounds 3 --no-nanogpt \
      --time-budget 100 2>&1 | grep -v Warn | tail -2
done
timeout 200 python3 bench/kernels.py --quick --out "$OUT/kernels" --backends fa_ck-triton sdpa-cudnn sdpa-flash \
    --rounds 5 --autograd-threads off --time-budget 180 2>&1 | grep -v Warn | tail -2
rm -f "$OUT"/*/*.png "$OUT"/*/results.json
for t in even main; do echo "== fp8, $t"; grep -A9 "## Forward: TFLOP" "$OUT/fp8_$t/results.md"; done
grep -B2 -A18 "## Targets\|## Forward: TFLOP\|## Forward + backward: TFLOP" "$OUT"/kernels/results.md | head -70
