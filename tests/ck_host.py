"""What the CK host tests share: clang 22 and a CK tree (or a skip), compiling and running a csrc/ harness for the
host, and the ck backend imported from this checkout."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import build_ck  # noqa: E402
import ck_compile_check as cc  # noqa: E402

CLANG = shutil.which("clang++-22")


def ck_backend():
    """(fa_ck.backends.ck, AttnParams) of this checkout's python/."""
    sys.path.insert(0, str(ROOT / "python"))
    from fa_ck.backends import ck
    from fa_ck.params import AttnParams
    return ck, AttnParams


def clang_or_skip() -> Path:
    """The CK tree to compile against; skips the test without clang 22 or a CK tree."""
    if CLANG is None:
        pytest.skip("clang++-22 not installed (.ci/ck_check.sh installs it)")
    ck = cc.ck_tree_here()
    if ck is None:
        pytest.skip("no CK tree (submodule, CK_DIR or .ckcache)")
    return ck


def host_run(ck, src: str, defines: list[str], tmp_path, name: str, opt: str = "-O1") -> dict:
    """Compile csrc/<src> for the host with clang 22 and the HIP stub, run it, and read its `key value` lines."""
    obj, exe = tmp_path / f"{name}.o", tmp_path / name
    cmd = [CLANG, "-x", "hip", "--cuda-host-only", "-nogpulib", "-nogpuinc", "-include",
           "__clang_hip_runtime_wrapper.h", f"-I{ROOT / 'tools' / 'hip_stub'}", "-std=c++20", opt, "-w",
           *build_ck.CK_DEFINES, *[f"-I{p}" for p in build_ck.include_dirs(ck)], *defines,
           "-c", "-o", str(obj), str(ROOT / "csrc" / src)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    subprocess.run([CLANG, "-o", str(exe), str(obj)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return dict(line.split(maxsplit=1) for line in out.splitlines())
