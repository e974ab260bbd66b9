#!/usr/bin/env bash
# CK compile check for gfx942 without an AMD GPU (called by .ci/run, no arguments).
# Installs upstream clang/lld/llvm 22 from Debian when missing, takes CK from $CK_DIR, the
# composable_kernel submodule or the amd-aiter wheel (cached in .ckcache/, outside git), and
# checks its files against the pin (tools/ck_pin.sha256), counts the shipped instances per kernel
# kind and head dim, compiles a representative subset of our CK instances (forward, backward, and
# KV-cache split-KV + combine + appendkv) plus csrc glue device-only (about 6-11 min on 2 cores), compiles each
# kernel that spills again with CK's own example flags (about 2.5 min more while three d128 forwards,
# the paged split-KV kernel, the combine kernel and the paged appendkv kernel spill), then runs
# tests/test_ck_build.py, tests/test_ck_kvcache.py and tests/test_ck_instances.py with clang present
# (about 4.5 min). Fails on a CK tree unlike the pin, an
# instance count unlike build_ck.SHIPPED_COUNTS, a compile error, a kernel without MFMA, a CK kernel
# that makes calls (other than to __ocml_* device math, which this stub build cannot inline), a spill
# that CK's example flags do not have, or a failing test.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python || command -v python3)}

if ! command -v clang++-22 >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends clang-22 lld-22 llvm-22 >/dev/null
fi
# The CK tree must be the pinned commit (tools/ck_pin.sha256) before anything is compiled or recorded.
echo "== CK tree against its pin =="
"$PY" tools/ck_pin.py
echo "== CK compile check (gfx942) =="
"$PY" tools/ck_compile_check.py --jobs 2 --results "${FA_CK_CHECK_RESULTS:-build/ck_check/ck_compile_check_gfx942.md}"
if "$PY" -c "import triton" 2>/dev/null; then
    echo "== Triton compile check (gfx942, sm_90) =="
    "$PY" tools/ck_compile_check.py --triton
fi
# The C++ tests need clang-22 and a CK tree, both present only now: the argument mapping, the mask
# and ALiBi arguments through CK's own classes, the generated dispatchers behind our glue with stub
# kernels (every admitted feature combination, device properties read once), the bindings.
echo "== CK glue tests (host compile of csrc/ with clang-22) =="
"$PY" -m pytest -q -p no:cacheprovider tests/test_ck_build.py tests/test_ck_kvcache.py tests/test_ck_instances.py
