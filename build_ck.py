"""How fa_ck builds Composable Kernel's FMHA: shared by setup.py and tools/ck_compile_check.py.

Kept free of torch and setuptools imports, so the compile check (no ROCm, no ROCm torch)
and the CPU tests can use it as is.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SUPPORTED_ARCHS = ("gfx90a", "gfx942", "gfx950")
DEFAULT_ARCHS = "gfx942"
# Head dims CK's codegen has tiles for (receipt 2); a head dim d uses the smallest >= d.
HDIMS = (32, 64, 96, 128, 192, 256)

# Instances we ship, as CK codegen filters (fnmatch on kernel names; bwd: dot_do_o@convert_dq@dq_dk_dv).
# Receipt 2 (CK's flash-attention set) already limits to fp16/bf16, row-major V, no/alibi bias, both
# modes, masks, dropout, softcap (forward only: CK's backward has none). We keep only forward kernels
# that write lse: every forward of ours returns it, and that halves the build.
RECEIPT = 2
FWD_FILTER = "fmha_fwd_*_lse_*"
BWD_FILTER = "*@*@*"

# Flags for every CK translation unit. FAST_EXP2 is what CK's forward is tuned with; the bf16
# rounding mode 3 is what CK's backward example builds with (flash-attn uses the same pair).
CK_DEFINES = [
    "-DCK_TILE_FMHA_FWD_FAST_EXP2=1",
    "-DCK_TILE_FLOAT_TO_BFLOAT16_DEFAULT=3",
    "-DCK_ENABLE_BF16",
    "-DCK_ENABLE_FP16",
    "-DCK_TILE_FMHA_FWD_SPLITKV_API=0",
    "-DCK_TILE_FMHA_FWD_APPENDKV_API=0",
]
CK_HIP_FLAGS = [
    "-std=c++20",
    "-O3",
    "-fgpu-flush-denormals-to-zero",
    "-fno-offload-uniform-block",
    "-mllvm", "--lsr-drop-solution=1",
    "-mllvm", "-enable-post-misched=0",
    "-Wno-undefined-func-template",
    "-Wno-float-equal",
    "-Wno-deprecated-attributes",
    "-Wno-unused-result",
]
# CK's own CMake adds these for ROCm's clang: they keep everything inlined (no s_swappc in kernels).
# Upstream clang-22 runs for over 15 minutes on one instance with them, so the CPU check leaves them out.
ROCM_ONLY_FLAGS = ["-mllvm", "-amdgpu-early-inline-all=true", "-mllvm", "-amdgpu-function-calls=false"]


class CKNotFound(RuntimeError):
    pass


def find_ck(root: Path = ROOT, environ=os.environ) -> Path:
    """CK sources: $CK_DIR, else the composable_kernel/ submodule."""
    if environ.get("CK_DIR"):
        ck = Path(environ["CK_DIR"]).expanduser().resolve()
        if not (ck / "include" / "ck_tile").is_dir():
            raise CKNotFound(f"CK_DIR={ck} has no include/ck_tile: point it at a composable_kernel checkout")
        return ck
    ck = root / "composable_kernel"
    if not (ck / "include" / "ck_tile").is_dir():
        raise CKNotFound(
            "composable_kernel/ is empty: run `git submodule update --init composable_kernel` "
            "(or clone with --recursive), or set CK_DIR to a composable_kernel checkout")
    return ck


def fmha_example_dir(ck: Path) -> Path:
    return ck / "example" / "ck_tile" / "01_fmha"


def parse_archs(value: str | None) -> list[str]:
    """FA_CK_ARCHS: comma/semicolon separated list of gfx90a, gfx942, gfx950 or native."""
    archs = [a.strip() for a in (value or DEFAULT_ARCHS).replace(";", ",").split(",") if a.strip()]
    for a in archs:
        if a != "native" and a not in SUPPORTED_ARCHS:
            raise ValueError(f"FA_CK_ARCHS: unsupported arch {a!r}; choose from "
                             f"{', '.join(SUPPORTED_ARCHS)} or native")
    if not archs:
        raise ValueError("FA_CK_ARCHS is empty")
    return archs


def parse_hdims(value: str | None) -> list[int]:
    """FA_CK_HDIMS (optional): build only these head-dim buckets, to cut build time."""
    if not value:
        return list(HDIMS)
    dims = sorted({int(x) for x in value.replace(";", ",").split(",") if x.strip()})
    bad = [d for d in dims if d not in HDIMS]
    if bad:
        raise ValueError(f"FA_CK_HDIMS: {bad} not in CK's head dims {HDIMS}")
    return dims


def codegen_targets(archs: list[str]) -> str:
    # codegen only knows concrete arches; "native" builds whatever the kernels of all known ones are.
    return ",".join(SUPPORTED_ARCHS if "native" in archs else archs)


def generate(ck: Path, out_dir: Path, archs: list[str], *, api: str = "fwd,bwd",
             filters: str | None = None, hdims: list[int] | None = None,
             receipt: int = RECEIPT) -> list[Path]:
    """Run CK's generate.py into out_dir (a build directory, never committed); return the .cpp files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if filters is None:
        filters = ",".join(FWD_FILTER if a == "fwd" else BWD_FILTER for a in api.split(","))
    cmd = [sys.executable, str(fmha_example_dir(ck) / "generate.py"),
           "--targets", codegen_targets(archs), "--api", api, "--receipt", str(receipt),
           "--filter", filters, "--output_dir", str(out_dir)]
    if hdims and sorted(hdims) != sorted(HDIMS):
        cmd += ["--optdim", ",".join(map(str, hdims))]
    subprocess.run(cmd, check=True, cwd=fmha_example_dir(ck))
    return sorted(out_dir.glob("*.cpp"))


def include_dirs(ck: Path) -> list[Path]:
    return [ROOT / "csrc", ck / "include", fmha_example_dir(ck)]
