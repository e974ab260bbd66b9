# Device call 6 of this folder (nvidia-h200), written 2026-12-02 (seventh part), not run: no device time
# was left. free_all.patch: every thread of a consumer warpgroup arrives on the K / V rings' empty
# barriers (and the dK/dV kernel's Q / dO ring and K / V buffer), by cp.async.mbarrier.arrive.noinc, the
# barriers counting 128 arrivals per warpgroup. Triton lowers Gluon's mbarrier.arrive as `bar.sync 0, 128`
# then one thread's arrive (the PTX shows it); the bar.sync holds the warpgroup's four warps together at
# every key block, and "CTA barrier" was the top stall in Nsight Compute for both forwards
# (h200-20261201-seventeenth). CUTLASS's pipelines release a stage with no such barrier. These buffers are
# read by wgmma only, each thread having waited for its wgmmas, so its own arrival is enough. SASS (Triton
# 3.6, sm90, d128 S4096 full): BAR.SYNC 39 -> 31 in the forward, 34 -> 30 in the dK/dV kernel; the
# arrivals become ARRIVES.LDGSTSBAR.64.ARVCNT. The sm90 compile check under 3.6 moves at five Gluon rows:
# dK/dV persistent d128 causal 32 -> 64 bytes of spills and full 0 -> 8 (the default at d128 up to 1024
# keys), dynamic d128 causal 48 -> 64, 128-queries d256 (asked for only) 0 / 24 -> 312 / 344; so if it
# wins, keep the dK/dV kernel's own barriers (kv_empty, q_empty) on mbarrier.arrive where those spill. Here: the GPU tests of the kernels it touches (failures
# named), then GPU time with the host hidden against main (`python/`), forward and backward.
#   The patched tree is free_python/ beside this script (main's python/ with free_all.patch applied), so
#   the call runs main and the patch side by side from one checkout:
#   git apply $D/free_all.patch && cp -r python $D/free_python && git checkout python
#   bash bench/results/h200-20261202-kvregs/call6.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
D=$PWD/bench/results/h200-20261202-kvregs
T=$PWD/bench/results/h200-20261201-twentieth
B=$PWD/bench/results/h200-20261202-dkdv-store
PYTHONPATH=$D/free_python python3 -c "import fa_ck; print('patched tree:', fa_ck.__file__)" | tee "$OUT/which.txt"
PYTHONPATH=$D/free_python timeout 230 python3 -m pytest tests/test_gluon_forward.py tests/test_gluon_backward.py -q -p no:warnings -m gpu \
    -n 16 -rf -k "(matches_reference or even_keys or short_causal or 192_queries) and not fp8" \
    2>&1 | grep -v "^\s*$" | grep -v "Warn\|warner" | grep -v "^\.*\s*\[" | tail -12 | tee "$OUT/tests.txt"
export POINTS='[[64,12,1024,64,true],[16,32,1024,64,false],[4,32,4096,64,false],[4,16,4096,128,false],
  [4,16,4096,128,true],[1,16,16384,128,false]]'
fwd() { (cd "$T" && PYTHONPATH=$2 timeout 70 python3 short_fwd.py) 2>&1 | grep -v Warn > "/tmp/$1.txt"
        mv "$OUT/short_fwd.json" "$OUT/$1.json"; }
bwd() { PYTHONPATH=$2 timeout 70 python3 $B/bwd_time.py 2>&1 | grep -v Warn > "/tmp/$1.txt"
        mv "$OUT/bwd_time.json" "$OUT/$1.json"; }
fwd fwd_free "$D/free_python"; fwd fwd_main "$PWD/python"
bwd bwd_free "$D/free_python"; bwd bwd_main "$PWD/python"
for n in fwd_free fwd_main bwd_free bwd_main; do echo "== $n"; grep '^|' "/tmp/$n.txt"; done
