# Device call 3 of the 2026-11-30 Gluon part (nvidia-h200): where the Gluon forward's warps stall
# (ncu source-level sampling, SASS), against forward.py, d128 S16k bf16 (call2_one.py).
#   bash bench/results/h200-20261130-gluon/call3.sh      (from the repo root)
set -uo pipefail
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/fa_ck_out}; mkdir -p "$OUT"
D=bench/results/h200-20261130-gluon
ncu --version | tail -1
for name in gluon plain; do
  cfg='{}'; [[ $name == plain ]] && cfg='{"fwd": {"GLUON": false}}'
  FA_CK_TRITON_CONFIG="$cfg" timeout 200 ncu --set full --import-source yes --launch-skip 2 --launch-count 1 -k regex:fwd \
      -f -o /tmp/$name python3 $D/call2_one.py > /dev/null 2>&1; echo "$name profile rc=$?"
  ncu -i /tmp/$name.ncu-rep --page details --section WarpStateStats --section ComputeWorkloadAnalysis --print-details all \
      > "$OUT/${name}_details.txt" 2>&1
  ncu -i /tmp/$name.ncu-rep --page source --print-source sass --csv > /tmp/${name}_sass.csv 2>&1
  python3 $D/call3_top.py /tmp/${name}_sass.csv > "$OUT/${name}_top.txt" 2>&1
  grep -iE "stall|pipe|issue" "$OUT/${name}_details.txt" | head -30
  head -30 "$OUT/${name}_top.txt"
done
