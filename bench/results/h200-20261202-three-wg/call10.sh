# Device call 10 (nvidia-h200), 2026-12-02, fourth part (run as this one command line on a warm machine,
# f666507's tree): does asking for 192 queries run slower than the default that gives them? short_fwd.py now
# times a point's backends interleaved (gpu_time.gpu_ms_each); d64 full, 192 queries by default and asked.
#   bash bench/results/h200-20261202-three-wg/call10.sh      (from the repo root)
source bench/device_env.sh; cd bench/results/h200-20261201-twentieth && POINTS='[[8,32,2048,64,false],[4,32,4096,64,false],[1,32,16384,64,false]]' timeout 80 python3 short_fwd.py bm192='{"fwd": {"BLOCK_M": 192}}' 2>&1 | grep '^|'
