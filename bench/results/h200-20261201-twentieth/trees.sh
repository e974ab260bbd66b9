# The trees calls 5 and 6 compare, made from the checkout (run from the repo root, before either
# call; untracked, not ignored: they travel with the working tree): main + one_bound.patch (one/),
# main + per_warpgroup_blocks.patch (pw/), main + both (both/). main itself is python/.
#   bash bench/results/h200-20261201-twentieth/trees.sh
set -euo pipefail
D=bench/results/h200-20261201-twentieth
for t in one pw both; do
  rm -rf $t && mkdir -p $t && git archive HEAD python | tar x -C $t
done
git apply --directory=one $D/one_bound.patch
git apply --directory=pw $D/per_warpgroup_blocks.patch
git apply --directory=both $D/one_bound.patch
git apply --directory=both $D/per_warpgroup_blocks.patch
