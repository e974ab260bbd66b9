#!/usr/bin/env bash
# CI check for bench/nanogpt.py under data-parallel training: two CPU processes under
# torchrun (gloo), the tiny preset, a few steps of sdpa and naive attention. Passes when
# every variant trained on both ranks, every loss is finite, and both ranks end with the
# very same weights (DDP kept them in sync) while having trained on different data.
#
#   .ci/nanogpt_ddp.sh            # uses $PYTHON, else python
# Exit status 0 on success. Set NANOGPT_DDP_OUT=DIR to keep the report (default: a temp dir, removed).
set -euo pipefail

PYTHON=${PYTHON:-python}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n "${NANOGPT_DDP_OUT:-}" ]]; then
    OUT=$NANOGPT_DDP_OUT
else
    OUT=$(mktemp -d "${TMPDIR:-/tmp}/nanogpt-ddp.XXXXXX")
    trap 'rm -rf "$OUT"' EXIT   # ours to clean up; a failure's report is printed above
fi

# GPUs hidden: this is the gloo path even on a machine that has one.
# OMP_NUM_THREADS=1: two processes on a small runner must not fight over the cores.
CUDA_VISIBLE_DEVICES= HIP_VISIBLE_DEVICES= OMP_NUM_THREADS=1 \
timeout 300 "$PYTHON" -m torch.distributed.run --standalone --nproc_per_node 2 \
    "$REPO/bench/nanogpt.py" --preset tiny --attn sdpa,naive --steps 6 --batch 4 --block 64 \
    --eval-every 3 --eval-iters 1 --no-plots --out "$OUT"

"$PYTHON" - "$OUT/results.json" <<'PY'
import json, math, sys
report = json.load(open(sys.argv[1]))
assert report["world_size"] == 2, f"world_size {report['world_size']}, expected 2"
problems = []
for name in ("sdpa", "naive"):
    r = report["variants"][name]
    if r["status"] != "ok":
        problems.append(f"{name}: {r['status']}: {r.get('reason')}")
        continue
    checksums = r["param_checksum_per_rank"]
    if len(checksums) != 2 or checksums[0] != checksums[1]:
        problems.append(f"{name}: ranks ended with different weights: {checksums}")
    per_rank = r["train_loss_per_rank"]
    if not all(math.isfinite(x) for losses in per_rank for x in losses):
        problems.append(f"{name}: non-finite loss: {per_rank}")
    if per_rank[0] == per_rank[1]:
        problems.append(f"{name}: both ranks saw identical losses: they did not get their own data shards")
    if len(per_rank[0]) != r["steps_done"] or r["steps_done"] != report["training"]["steps"]:
        problems.append(f"{name}: {r['steps_done']} steps done, {len(per_rank[0])} losses recorded")
delta = report["variants"]["naive"].get("val_loss_delta_vs_sdpa")
if delta is None or abs(delta) > 1e-3:
    problems.append(f"naive and sdpa val losses differ by {delta}")
if problems:
    sys.exit("nanogpt DDP check FAILED:\n  " + "\n  ".join(problems))
print(f"nanogpt DDP check passed: 2 ranks, identical weights, naive - sdpa val loss {delta:+.2e}")
PY
