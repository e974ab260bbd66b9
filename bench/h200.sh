#!/usr/bin/env bash
# One step of GPU work on an NVIDIA GPU machine (written for an H200), sized to finish within 10
# minutes. Everything lands in $OUT (default /tmp/fa_ck_out).
#   bash bench/h200.sh gpu-tests     GPU-only shapes, one process per test (~6 min)
#   bash bench/h200.sh small-tests   every test not marked gpu (the CPU suite) on the GPU, 12 workers (~3 min)
#   bash bench/h200.sh parallel-gpu-tests   every other GPU test (Gluon kernels, host path, ...), 12 workers (~4 min)
#   bash bench/h200.sh sweep [SECONDS]   bench/random_sweep.py, 12 workers per GPU, budget SECONDS (default 480)
#   bash bench/h200.sh kernels [args for bench/kernels.py]   the sweep against SDPA cuDNN / flash
#   bash bench/h200.sh flash-attn-suite DIR   flash-attn's own tests (DIR from `tools/flash_attn_suite.sh fetch DIR`
#                                             on a machine with PyPI, carried over), ~9 min
#   bash bench/h200.sh kvcache-tests   the KV-cache, append and decode-kernel tests on the GPU (~2 min)
#   bash bench/h200.sh decode [args for bench/decode.py]   decode latency and bandwidth beside SDPA, flex, copy;
#                                                          then bench/decode_append.py (~20 s)
#   bash bench/h200.sh compare REV [args for bench/kernels.py]   bench/compare.py: this tree against REV, two
#                                                          processes each in turns, beside SDPA cuDNN
#   bash bench/h200.sh nanogpt PRESET [args]   bench/nanogpt.py compiled, every variant (gpt2: ~8 min, gpt2-long: ~9)
# (`tests` is gpu-tests then small-tests: longer than one 10-minute step.)
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:?usage: bash bench/h200.sh gpu-tests|small-tests|parallel-gpu-tests|tests|sweep [seconds]|kernels [args]|flash-attn-suite DIR|kvcache-tests|decode [args]|compare REV [args]|nanogpt PRESET [args]}
shift || true
source bench/device_env.sh          # PYTHONPATH etc., $OUT, $OUT/env.txt
if [[ $what == gpu-tests || $what == tests ]]; then
  # GPU-only shapes, one process per test: a CUDA fault leaves its process unusable, and
  # CUDA_LAUNCH_BLOCKING=1 pins the fault on the launch that made it.
  : > "$OUT/pytest_gpu.log"
  for t in $(python3 -m pytest tests/test_gpu_scale.py tests/test_triton_kernels.py -m gpu --collect-only -q \
             -p no:cacheprovider 2>/dev/null | grep '::'); do
    CUDA_LAUNCH_BLOCKING=1 timeout 240 python3 -m pytest "$t" -q -p no:cacheprovider >> "$OUT/pytest_gpu.log" 2>&1
    rc=$?; echo "$t rc=$rc" | tee -a "$OUT/gpu_summary.txt"
    if [[ $rc != 0 && $t == *varlen* ]] && command -v compute-sanitizer > /dev/null; then
      timeout 240 compute-sanitizer --tool memcheck --print-limit 20 python3 tools/varlen_repro.py \
        > "$OUT/sanitizer.log" 2>&1; echo "sanitizer rc=$?"; tail -30 "$OUT/sanitizer.log"
    fi
  done
fi
if [[ $what == small-tests || $what == tests ]]; then
  # every test not marked gpu (the CPU suite's shapes, the bench and harness tests) in parallel,
  # ~150 s on an H200
  timeout 420 python3 -m pytest tests -v -rf -n 12 -m "not gpu and not bigmem" -p no:cacheprovider \
      > "$OUT/pytest.log" 2>&1          # -v: a run cut short still names its failures
  echo "small-shape tests rc=$?"; tail -4 "$OUT/pytest.log"
fi
if [[ $what == parallel-gpu-tests ]]; then
  # the GPU tests that fit 12 at a time (bigmem ones, float64 references of long sequences, run
  # out of memory that way); gpu-tests runs those one at a time
  timeout 420 python3 -m pytest tests -m "gpu and not bigmem" -q -rf -n 12 -p no:cacheprovider > "$OUT/pytest_parallel.log" 2>&1
  echo "parallel GPU tests rc=$?"; grep -E "FAILED|Error|passed|failed" "$OUT/pytest_parallel.log" | tail -12
fi
if [[ $what == sweep ]]; then
  # 12 processes share each GPU (compiles dominate a case); 14 workers run ~750 cases in 5 minutes.
  # The budget stops new cases only: leave the 10-minute step room for the last ones and startup.
  budget=${1:-480}
  # torch's count, as random_sweep.py spreads workers over (it honours CUDA_VISIBLE_DEVICES)
  gpus=$(python3 -c "import torch; print(max(torch.cuda.device_count(), 1))" 2>/dev/null || echo 1)
  python3 bench/random_sweep.py --workers $((12 * gpus)) --cases 3000 --time-budget "$budget" --out "$OUT/sweep"
fi
if [[ $what == kernels ]]; then
  python3 bench/kernels.py --out "$OUT/kernels" "$@"
fi
if [[ $what == flash-attn-suite ]]; then
  dir=${1:?flash-attn-suite needs the DIR that tools/flash_attn_suite.sh fetch laid out}
  shift
  timeout -s INT 540 bash tools/flash_attn_suite.sh run "$dir" -n 15 -q "$@" > "$OUT/flash_attn_suite.log" 2>&1
  echo "flash-attn suite rc=$?"; tail -3 "$OUT/flash_attn_suite.log"; cp "$dir/summary.json" "$OUT/" 2>/dev/null
fi
if [[ $what == kvcache-tests ]]; then
  timeout 300 python3 -m pytest tests/test_decode_kernels.py tests/test_kvcache.py tests/test_kvcache_append.py -q -rf -n 8 -p no:cacheprovider \
      > "$OUT/pytest_kvcache.log" 2>&1
  echo "KV-cache tests rc=$?"; tail -4 "$OUT/pytest_kvcache.log"
fi
if [[ $what == decode ]]; then
  python3 bench/decode.py --out "$OUT/decode" "$@"
  python3 bench/decode_append.py --out "$OUT/decode-append"
fi
if [[ $what == compare ]]; then
  rev=${1:?compare needs the commit to compare with}
  shift
  # the runs' own files stay out of $OUT (8 files come back): the comparison, then the runs' JSON in one archive
  rm -rf /tmp/fa_ck_compare
  python3 bench/compare.py "$rev" --out /tmp/fa_ck_compare -- "$@"; echo "compare rc=$?"
  cp /tmp/fa_ck_compare/results.md "$OUT/compare.md" 2>/dev/null; cp /tmp/fa_ck_compare/results.json "$OUT/compare.json" 2>/dev/null
  [[ -d /tmp/fa_ck_compare ]] && (cd /tmp/fa_ck_compare && tar -czf "$OUT/compare-runs.tgz" --exclude='tree-*' --exclude='*.png' .)
fi
if [[ $what == nanogpt ]]; then
  preset=${1:?nanogpt needs a preset: gpt2 or gpt2-long}
  shift
  python3 bench/nanogpt.py --preset "$preset" --attn sdpa,triton,triton-fp8,flex,naive --out "$OUT/nanogpt-$preset" "$@"
fi
