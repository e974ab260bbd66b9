# Device call 4 of this folder (nvidia-h200), 2026-12-03 (seventh session): which pipes the fp8
# forward's loop fills (Nsight Compute ComputeWorkloadAnalysis, InstructionStats, SpeedOfLight; raw
# metrics as CSV), d128 S16k B1 H16 full, the fp8 forward (its Gluon kernel) and the bf16 one, one
# call each after warm-up (ncu_fp8.py). The question: do the loop's 32 F2FP (P to e4m3) per warp and
# block share the XU pipe with its 66 MUFU.EX2 (sm__inst_executed_pipe_xu against the SASS counts).
#   bash bench/results/h200-20261203-tree/call4.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
W=$OUT/w; mkdir -p $W
for what in fp8 bf16; do
  timeout 150 ncu --profile-from-start off --clock-control none --kernel-name regex:fwd_gluon \
      --section ComputeWorkloadAnalysis --section InstructionStats --section SpeedOfLight -f -o "$W/pipes_$what" \
      python3 bench/results/h200-20261203-tree/ncu_fp8.py $what > "$W/ncu_$what.txt" 2>&1
  echo "ncu $what rc=$?"; grep -E "profiled|==ERROR==" "$W/ncu_$what.txt" | head -3
  ncu -i "$W/pipes_$what.ncu-rep" --page raw --csv > "$OUT/raw_$what.csv" 2>&1
  ncu -i "$W/pipes_$what.ncu-rep" --page details --print-details all > "$OUT/details_$what.txt" 2>&1
  python3 - "$OUT/raw_$what.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head, units, vals = rows[0], rows[1], rows[2]
for n, u, v in zip(head, units, vals):
    if any(t in n for t in ("inst_executed_pipe_", "pipe_tensor", "gpu__time_duration.sum", "sass_inst_executed_op",
                            "inst_executed.sum", "pipe_xu", "pipe_fma", "pipe_alu")):
        print(f"{n} [{u}] = {v}")
PY
done
