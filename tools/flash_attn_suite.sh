#!/usr/bin/env bash
# flash-attn 2.8.3's own tests/test_flash_attn.py, upstream and unmodified, run against fa_ck.
#
#   bash tools/flash_attn_suite.sh fetch DIR               # CPU machine, needs PyPI
#   bash tools/flash_attn_suite.sh run DIR [PYTEST_ARGS]   # GPU machine, no network
#   bash tools/flash_attn_suite.sh run DIR --cpu [ARGS]    # a few small cases in the Triton interpreter
#
# fetch downloads the flash-attn 2.8.3.post2 sdist and lays out DIR: the test file, a flash_attn shim
# package (fa_ck's functions; flash-attn's own bert_padding.py and rotary reference from the sdist)
# and the conftest that selects what fits one 10-minute GPU call (tools/flash_attn_shim/conftest.py), and
# wheels of einops and pytest-xdist, which run installs from DIR when they are missing (no network there).
# run writes DIR/junit[-cpu].xml and DIR/summary[-cpu].json (pass/fail/skip counts, each failure).
# Nothing from the sdist is committed: DIR lives outside the repository or is ignored.
set -euo pipefail

VERSION=2.8.3.post2
SHA256=d0f9f0b08a986cdeadbffcf5ec8b3a8f514366c68ad1853d3ab061bc83cc340b
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHIM=$REPO/tools/flash_attn_shim
PYTHON=${PYTHON:-python3}
# Upstream files the suite needs; the rotary pair is test_flash_attn_kvcache's reference.
MEMBERS=(tests/test_flash_attn.py flash_attn/bert_padding.py flash_attn/layers/__init__.py
         flash_attn/layers/rotary.py flash_attn/ops/__init__.py flash_attn/ops/triton/__init__.py
         flash_attn/ops/triton/rotary.py)

usage() { sed -n '4,6p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2; exit 2; }

fetch() {
    local dir=$1 tmp sdist
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    mkdir -p "$tmp/cuda"
    # pip prepares the sdist's metadata by running its setup.py, which imports torch (hence no build
    # isolation) and wants CUDA_HOME unless told to skip the CUDA build.
    FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE CUDA_HOME=${CUDA_HOME:-$tmp/cuda} \
        "$PYTHON" -m pip download "flash-attn==$VERSION" --no-deps --no-binary :all: --no-build-isolation \
        --disable-pip-version-check -q -d "$tmp/dl"
    sdist=$tmp/dl/flash_attn-$VERSION.tar.gz
    echo "$SHA256  $sdist" | sha256sum -c --quiet -
    tar -xzf "$sdist" -C "$tmp" "${MEMBERS[@]/#/flash_attn-$VERSION/}"
    for m in "${MEMBERS[@]}"; do
        mkdir -p "$dir/$(dirname "$m")"
        cp "$tmp/flash_attn-$VERSION/$m" "$dir/$m"
    done
    cp "$SHIM/flash_attn/__init__.py" "$SHIM/flash_attn/flash_attn_interface.py" "$dir/flash_attn/"
    cp "$SHIM/conftest.py" "$dir/conftest.py"
    # what the upstream tests import beyond torch and pytest, for a GPU machine without PyPI
    "$PYTHON" -m pip download einops pytest-xdist --disable-pip-version-check -q -d "$dir/wheels"
    printf '[pytest]\naddopts = -ra -p no:cacheprovider\n' > "$dir/pytest.ini"    # DIR is its own rootdir
    echo "flash-attn $VERSION suite laid out in $dir"
}

run() {
    local dir test junit summary
    dir=$(cd "$1" && pwd); shift
    [[ -f $dir/tests/test_flash_attn.py ]] || { echo "no $dir/tests/test_flash_attn.py: run fetch first" >&2; exit 2; }
    cp "$SHIM/conftest.py" "$dir/conftest.py"     # the committed selection, even in an older DIR
    if ! "$PYTHON" -c "import einops, xdist" 2>/dev/null && [[ -d $dir/wheels ]]; then
        echo "installing einops and pytest-xdist from $dir/wheels"
        "$PYTHON" -m pip install -q --no-index --find-links "$dir/wheels" einops pytest-xdist
    fi
    test=tests/test_flash_attn.py junit=$dir/junit.xml summary=$dir/summary.json
    if [[ ${1:-} == --cpu ]]; then
        shift
        # CPU mode only: the upstream tests put every tensor on "cuda" by name.
        mkdir -p "$dir/cpu"
        sed -e 's/device = "cuda"/device = "cpu"/' -e 's/device="cuda"/device="cpu"/' \
            "$dir/tests/test_flash_attn.py" > "$dir/cpu/test_flash_attn.py"
        test=cpu/test_flash_attn.py junit=$dir/junit-cpu.xml summary=$dir/summary-cpu.json
        export FA_SUITE_CPU=1 TRITON_INTERPRET=1
    fi
    rm -f "$junit" "$summary"      # a run cut short leaves no earlier run's counts behind
    cd "$dir"
    export FA_SUITE_SUMMARY=$summary PYTHONPATH="$dir:$REPO/python${PYTHONPATH:+:$PYTHONPATH}"
    # the workers share one GPU: blocks freed by one are usable by the others
    export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
    exec "$PYTHON" -m pytest "$test" --junitxml="$junit" "$@"    # exec: a timeout's signal reaches pytest
}

case ${1:-} in
    fetch) [[ $# -eq 2 ]] || usage; fetch "$2" ;;
    run) [[ $# -ge 2 ]] || usage; shift; run "$@" ;;
    *) usage ;;
esac
