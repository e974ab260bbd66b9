# Device call 1 (nvidia-h200), 2026-12-02: out's TMA store past head dim 128, through staging tiles half
# as wide (forward_gluon._store_out, configs.fwd_gluon_out_cols; on by default in the tree run). The GPU
# tests of the wide Gluon forwards (d136-d256) in every schedule; GPU time of d256 / d192 forwards with
# it and without (`plain`), beside SDPA cuDNN and flash; the timeline of d256 S512 tiles both ways.
# (It ran a copy of the twentieth part's timeline.py with POINTS from the environment and the replay
# buffer kept across calls; both changes are in that file since, and the copy is gone.)
#   bash bench/results/h200-20261202-d256/call1.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
T=$PWD/bench/results/h200-20261201-twentieth
timeout 240 python3 -m pytest tests/test_gluon_forward.py -q -p no:warnings -m gpu \
    -k "matches_reference and (shape8 or shape9 or shape10 or shape11 or shape12)" 2>&1 | tail -3 | tee "$OUT/tests.txt"
export POINTS='[[32,8,512,256,false],[32,8,512,256,true],[16,8,1024,256,false],[16,8,1024,256,true],
  [4,8,4096,256,false],[4,8,4096,256,true],[32,8,512,192,false],[32,8,512,192,true]]'
(cd "$T" && timeout 170 python3 short_fwd.py plain='{"fwd": {"TMA_STORE": false}}') 2>&1 | grep -v Warn \
    > "$OUT/short_fwd.txt"; grep '^|' "$OUT/short_fwd.txt"
P='{\"fwd\": {\"TMA_STORE\": false}}'
POINTS="[[32,8,512,256,false,\"\"],[32,8,512,256,false,\"$P\"],[32,8,512,256,true,\"\"],[32,8,512,256,true,\"$P\"]]" \
    timeout 150 python3 "$T/timeline.py" 2>&1 | grep -v Warn > "$OUT/timeline.txt"; grep '^|' "$OUT/timeline.txt"
