export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
for poison in 0 1; do for guard in "" --guard; do
  echo "== poison=$poison guard=$guard" >> $OUT/repro.log
  FA_CK_POISON=$poison timeout 60 python3 tools/varlen_repro.py $guard >> $OUT/repro.log 2>&1
  echo "poison=$poison guard=$guard rc=$?"; tail -1 $OUT/repro.log
done; done
FA_CK_POISON=1 timeout 150 compute-sanitizer --tool memcheck --print-limit 10 python3 tools/varlen_repro.py --guard > $OUT/sanitizer.log 2>&1
echo "sanitizer rc=$?"; grep -v "^=========     " $OUT/sanitizer.log | head -30
timeout 170 python3 bench/random_sweep.py --cases 3000 --time-budget 150 --out $OUT/sweep > /dev/null 2>&1; echo "sweep rc=$?"; head -16 $OUT/sweep/summary.md
timeout 150 python3 bench/kernels.py --out $OUT/kernels --backends fa_ck-triton fa_ck-fp8 sdpa-cudnn sdpa-flash --dtype bf16 --hdim 64 128 --mode fwd --seqlens 1024 4096 16384 --time-budget 120 > $OUT/kernels.log 2>&1; echo "kernels rc=$?"; rm -f $OUT/kernels/*.png; ls $OUT/kernels; tail -25 $OUT/kernels.log
