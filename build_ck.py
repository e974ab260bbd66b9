"""How fa_ck builds Composable Kernel's FMHA: shared by setup.py and tools/ck_compile_check.py.

Kept free of torch and setuptools imports, so the compile check (no ROCm, no ROCm torch)
and the CPU tests can use it as is.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SUPPORTED_ARCHS = ("gfx90a", "gfx942", "gfx950")
DEFAULT_ARCHS = "gfx942"
# Head dims CK's codegen has tiles for (receipt 2); a head dim d uses the smallest >= d.
HDIMS = (32, 64, 96, 128, 192, 256)

# Instances we ship, as CK codegen filters (fnmatch on kernel names; bwd: dot_do_o@convert_dq@dq_dk_dv,
# fwd_splitkv: combine@split-KV).
# Receipt 2 (CK's flash-attention set) already limits to fp16/bf16, row-major V, no/alibi bias, both
# modes, masks, dropout, softcap (forward only: CK's backward has none). We keep only forward kernels
# that write lse: every forward of ours returns it, and that halves the build.
# KV-cache decoding (fwd_splitkv, CK's split-KV kernel and its combine kernel): group mode only (each row
# has its own key count and first key, which is how the glue expresses cache_batch_idx and leftpad), dense
# and paged, kernels padding the sequence lengths but not the head dim ("pssk"), but for d96, where CK's
# dispatcher reaches only the head-dim-padded kernel.
# The KV-cache append (fwd_appendkv, CK's appendkv kernel: the new keys rotated and written into the cache,
# q rotated): everything receipt 2 generates, fp16/bf16 at d32, 64, 128, 256 (CK has no d96 appendkv tile:
# head dims 65-96 run the d128 kernels, which pad the head dim), dense and paged, no rotary, interleaved and
# half-rotated, each with and without query-length and head-dim padding (the unpadded ones serve Sq % 64 == 0).
RECEIPT = 2
FWD_FILTER = "fmha_fwd_*_lse_*"
BWD_FILTER = "*@*@*"
SPLITKV_FILTER = "fmha_fwd_splitkv_combine_d*_[fb][pf]16_group_*@fmha_fwd_splitkv_d*_group_*_qr_vr_pssk*"
APPENDKV_FILTER = "fmha_fwd_appendkv_d*_[fb][pf]16_*"
FILTERS = {"fwd": FWD_FILTER, "bwd": BWD_FILTER, "fwd_splitkv": SPLITKV_FILTER, "fwd_appendkv": APPENDKV_FILTER}
APIS = "fwd,bwd,fwd_splitkv,fwd_appendkv"
# The appendkv tile each built head-dim bucket needs (FA_CK_HDIMS): CK's appendkv dispatcher takes the smallest
# tile >= the head dim; d192 has no split-KV kernel, so no append either.
APPENDKV_TILE = {32: 32, 64: 64, 96: 128, 128: 128, 256: 256}
# Instances of receipt 2 that fa_ck's dispatch can never reach, left out of the build (fnmatch on kernel names;
# codegen filters cannot say "not", so generate() applies these around CK's codegen):
# - forward d192 with a v head dim of 128 (tile b128x128x32x128x32x192): capability_gap sends every call whose v
#   head dim differs from q's to triton, so hdim_v <= 128 with hdim_q in 129..192 never reaches CK;
# - backward dq/dk/dv kernels padding the head dim to 1 (pd1dv1): CK's dispatcher tries the pd8dv8 kernel first
#   for head dims that are multiples of 8, and capability_gap sends every other head dim to triton;
# - split-KV d96 kernels without head-dim padding: CK's dispatcher takes them only for head dims that are
#   multiples of 128; split-KV kernels padding the head dim at 32, 64, 128, 256 (and their combine kernels):
#   kvcache_gap sends head dims other than 32, 64, 65-96, 128, 256 to triton (CK's padded loads there are
#   one element wide).
FWD_EXCLUDE = ("fmha_fwd_d192_*_b128x128x32x128x32x192_*",)
BWD_EXCLUDE = ("fmha_bwd_d*_pd1dv1_*",)
SPLITKV_EXCLUDE = ("fmha_fwd_splitkv_d96_*_pssk_*", "fmha_fwd_splitkv_combine_d96_*_ps_*",
                   *(f"fmha_fwd_splitkv_d{h}_*_psskddv_*" for h in (32, 64, 128, 256)),
                   *(f"fmha_fwd_splitkv_combine_d{h}_*_psdv_*" for h in (32, 64, 128, 256)))
EXCLUDES = {"fwd": FWD_EXCLUDE, "bwd": BWD_EXCLUDE, "fwd_splitkv": SPLITKV_EXCLUDE, "fwd_appendkv": ()}
# What the shipped set is, per architecture, with every head dim (tests/test_ck_instances.py and the compile check
# hold the codegen to it): forward kernels, backward dot_do_o + convert_dq + dq_dk_dv kernels, and KV-cache
# split-KV + combine + appendkv kernels.
SHIPPED_COUNTS = {"fwd": 480, "bwd": 820, "kvcache": 236}

# Flags for every CK translation unit. FAST_EXP2 is what CK's forward is tuned with; the bf16
# rounding mode 3 is what CK's backward example builds with (flash-attn uses the same pair). The SPLITKV/APPENDKV
# switches are read only by CK's example runner and tests, never by its headers or the generated instances:
# 1, as CK's own library build sets them when it compiles these APIs, which fa_ck does.
CK_DEFINES = [
    "-DCK_TILE_FMHA_FWD_FAST_EXP2=1",
    "-DCK_TILE_FLOAT_TO_BFLOAT16_DEFAULT=3",
    "-DCK_ENABLE_BF16",
    "-DCK_ENABLE_FP16",
    "-DCK_TILE_FMHA_FWD_SPLITKV_API=1",
    "-DCK_TILE_FMHA_FWD_APPENDKV_API=1",
]
# Flags for every CK translation unit that any compiler of ours takes (ROCm's hipcc, upstream clang 22).
CK_BASE_HIP_FLAGS = [
    "-std=c++20",
    "-O3",
    "-fgpu-flush-denormals-to-zero",
    "-Wno-undefined-func-template",
    "-Wno-float-equal",
    "-Wno-deprecated-attributes",
    "-Wno-unused-result",
]
# CK's CMakeLists adds these only from the HIP SDK version shown (flat: (major*1000+minor)*100000+patch,
# "> 600241132" there is ">= 6.2.41133" here); the last column is the first HIP that rejects the flag.
# (first HIP version with the flags, first HIP version without them or None, flags)
HIP_VERSION_FLAGS = [
    ((5, 5, 1), None, ["-mllvm", "--lsr-drop-solution=1"]),
    ((5, 7, 23303), None, ["-fno-offload-uniform-block"]),
    ((6, 1, 40091), None, ["-mllvm", "-enable-post-misched=0"]),
    # keep everything inlined: no s_swappc calls in the kernels
    ((6, 2, 41133), None, ["-mllvm", "-amdgpu-early-inline-all=true", "-mllvm", "-amdgpu-function-calls=false"]),
    # ROCm 7.2's LLVM removed the option (hipcc rejects it); CK's CMake adds it only where the compiler takes it
    ((6, 2, 41133), (7, 2, 0), ["-mllvm", "-amdgpu-coerce-illegal-types=1"]),
]
# What the gfx942 compile check (upstream clang 22, tools/ck_compile_check.py) compiles with: the
# version-gated flags clang 22 takes, less the inlining pair (clang 22 runs for over 15 minutes on one
# instance with them).
CK_HIP_FLAGS = CK_BASE_HIP_FLAGS[:3] + [
    "-fno-offload-uniform-block",
    "-mllvm", "--lsr-drop-solution=1",
    "-mllvm", "-enable-post-misched=0",
] + CK_BASE_HIP_FLAGS[3:]
ROCM_ONLY_FLAGS = ["-mllvm", "-amdgpu-early-inline-all=true", "-mllvm", "-amdgpu-function-calls=false"]
# What CK's own example build (example/ck_tile/01_fmha/CMakeLists.txt at the pin, CMake's default Release) compiles
# each instance with, per direction, beyond the version-gated flags it shares with us: -O3 -DNDEBUG (Release),
# -std=c++20 (CK_CXX_STANDARD), and the instance libraries' PRIVATE options. Unlike ours, its forward instances get
# no bf16 rounding mode and no SPLITKV/APPENDKV defines (those are INTERFACE options, for the example's own code).
CK_EXAMPLE_FLAGS = {
    "fwd": ["-Wno-undefined-func-template", "-Wno-float-equal", "-DCK_TILE_FMHA_FWD_FAST_EXP2=1",
            "-fgpu-flush-denormals-to-zero"],
    "bwd": ["-Wno-undefined-func-template", "-Wno-float-equal", "-fgpu-flush-denormals-to-zero",
            "-DCK_TILE_FLOAT_TO_BFLOAT16_DEFAULT=3"],
}


def ck_example_flags(direction: str, gated=None) -> list[str]:
    """CK's example flags for a `direction` ("fwd"/"bwd") instance; gated: the version-gated flags (default: the
    set upstream clang 22 takes, as the compile check uses for fa_ck's own flags)."""
    if gated is None:
        gated = [f for f in CK_HIP_FLAGS if f not in CK_BASE_HIP_FLAGS]
    return ["-std=c++20", "-O3", "-DNDEBUG"] + list(gated) + CK_EXAMPLE_FLAGS[direction]
# The composable_kernel submodule's pinned commit: what an sdist (which carries no CK) needs from CK_DIR.
CK_COMMIT = "e31a7a4f29b371c32ea9daf9211b6ae1fed2fa40"


def parse_hip_version(text: str, source: str = "HIP version") -> tuple[int, int, int]:
    """(major, minor, patch) from '6.2.41133-dd7f95766' (torch.version.hip, hipconfig --version) or '6.2'."""
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    if not m:
        raise ValueError(f"{source}: cannot read a HIP version from {text!r} (expected e.g. 6.2.41133)")
    return int(m[1]), int(m[2]), int(m[3] or 0)


def hip_version_flags(version) -> list[str]:
    """The hipcc flags CK's build gates by HIP version, for HIP `version` (a string or a tuple)."""
    v = parse_hip_version(version) if isinstance(version, str) else tuple(version)
    flags: list[str] = []
    for first, stop, fl in HIP_VERSION_FLAGS:
        if v >= first and (stop is None or v < stop):
            flags += fl
    return flags


def ck_hip_flags(version) -> list[str]:
    """Every hipcc flag of a CK translation unit for HIP `version`, arch flags aside."""
    return CK_BASE_HIP_FLAGS + hip_version_flags(version) + CK_DEFINES


def find_rocm(environ=os.environ, default: str = "/opt/rocm") -> Path | None:
    """The ROCm SDK torch's cpp_extension would use: $ROCM_HOME/$ROCM_PATH, hipcc on PATH, /opt/rocm.
    None when there is none; ValueError when ROCM_HOME/ROCM_PATH names a directory without bin/hipcc."""
    for var in ("ROCM_HOME", "ROCM_PATH"):
        if environ.get(var):
            home = Path(environ[var]).expanduser()
            if not (home / "bin" / "hipcc").is_file():
                raise ValueError(f"{var}={home} has no bin/hipcc: point it at a ROCm install (e.g. /opt/rocm)")
            return home
    hipcc = shutil.which("hipcc", path=environ.get("PATH", ""))
    if hipcc:
        home = Path(os.path.realpath(hipcc)).parent.parent
        return home.parent if home.name == "hip" else home
    if default and (Path(default) / "bin" / "hipcc").is_file():
        return Path(default)
    return None


def sdk_hip_version(rocm: Path) -> tuple[int, int, int] | None:
    """The HIP version of the ROCm SDK at `rocm`: include/hip/hip_version.h, else `hipconfig --version`."""
    header = rocm / "include" / "hip" / "hip_version.h"
    if header.is_file():
        found = dict(re.findall(r"#define\s+HIP_VERSION_(MAJOR|MINOR|PATCH)\s+(\d+)", header.read_text()))
        if len(found) == 3:
            return int(found["MAJOR"]), int(found["MINOR"]), int(found["PATCH"])
    hipconfig = rocm / "bin" / "hipconfig"
    if hipconfig.is_file():
        try:
            out = subprocess.run([str(hipconfig), "--version"], capture_output=True, text=True, timeout=60)
            return parse_hip_version(out.stdout, f"{hipconfig} --version")
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return None
    return None


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
            "no CK sources: composable_kernel/ is missing or empty. In a git checkout run "
            "`git submodule update --init composable_kernel` (or clone with --recursive); an sdist carries "
            "no CK: set CK_DIR to a composable_kernel checkout "
            f"(https://github.com/ROCm/composable_kernel at commit {CK_COMMIT})")
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


def parse_max_jobs(value: str | None) -> int | None:
    """MAX_JOBS (optional): parallel compile jobs, as torch's BuildExtension reads it."""
    if value is None or value == "":
        return None
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f"MAX_JOBS must be a positive integer, not {value!r}")
    return int(value)


def codegen_targets(archs: list[str]) -> str:
    # codegen only knows concrete arches; "native" builds whatever the kernels of all known ones are.
    return ",".join(SUPPORTED_ARCHS if "native" in archs else archs)


def generate(ck: Path, out_dir: Path, archs: list[str], *, api: str = APIS,
             filters: str | None = None, hdims: list[int] | None = None,
             receipt: int = RECEIPT, exclude=None) -> list[Path]:
    """Run CK's generate.py into out_dir (a build directory, never committed); return the .cpp files.
    exclude: kernel-name patterns left out (default: EXCLUDES of the apis asked; () for none)."""
    out_dir = Path(out_dir).resolve()     # codegen runs in CK's example dir: a relative path would land there
    out_dir.mkdir(parents=True, exist_ok=True)
    for run_api, run_filters, optdim in codegen_runs(api, filters, hdims):
        subprocess.run(codegen_cmd(ck, archs, run_api, run_filters, optdim, receipt, exclude,
                                   ["--output_dir", str(out_dir)]), check=True, cwd=fmha_example_dir(ck))
    return sorted(out_dir.glob("*.cpp"))


def appendkv_hdims(hdims) -> list[int]:
    """The appendkv tiles FA_CK_HDIMS `hdims` need (APPENDKV_TILE)."""
    return sorted({APPENDKV_TILE[h] for h in hdims if h in APPENDKV_TILE})


def codegen_runs(api: str, filters: str | None, hdims) -> list[tuple[str, str, list[int] | None]]:
    """(apis, filters, --optdim list or None for every head dim) per codegen run: appendkv takes its own head dims
    (APPENDKV_TILE), the other apis FA_CK_HDIMS' buckets."""
    apis = api.split(",")
    filts = (filters.split(",") if filters is not None else [FILTERS[a] for a in apis])
    filts += [""] * (len(apis) - len(filts))
    subset = bool(hdims) and sorted(hdims) != sorted(HDIMS)
    runs: dict[tuple[int, ...] | None, list[tuple[str, str]]] = {}
    for a, f in zip(apis, filts):
        dims = None
        if subset:
            # [0]: no head dim, an api file without instances (the glue still links against it)
            dims = tuple((appendkv_hdims(hdims) or [0]) if a == "fwd_appendkv" else sorted(hdims))
        runs.setdefault(dims, []).append((a, f))
    return [(",".join(a for a, _ in pairs), ",".join(f for _, f in pairs), None if dims is None else list(dims))
            for dims, pairs in runs.items()]


# Runs CK's generate.py with fnmatch.fnmatch also refusing the names matching any of argv[1]'s patterns (JSON).
_CODEGEN_EXCLUDING = """\
import fnmatch, json, runpy, sys
exclude = json.loads(sys.argv.pop(1))
_match = fnmatch.fnmatch
fnmatch.fnmatch = lambda name, pat: _match(name, pat) and not any(_match(name, x) for x in exclude)
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def codegen_cmd(ck: Path, archs: list[str], api: str, filters: str, optdim, receipt: int, exclude,
                extra) -> list[str]:
    """CK's generate.py command line; optdim: the --optdim head dims, None for every head dim."""
    import json
    script = str(fmha_example_dir(ck) / "generate.py")
    cmd = [sys.executable, script]
    if exclude is None:
        exclude = [x for a in api.split(",") for x in EXCLUDES[a]]
    if exclude:
        cmd = [sys.executable, "-c", _CODEGEN_EXCLUDING, json.dumps(list(exclude)), script]
    cmd += ["--targets", codegen_targets(archs), "--api", api, "--receipt", str(receipt), "--filter", filters]
    if optdim is not None:
        cmd += ["--optdim", ",".join(map(str, optdim))]
    return cmd + list(extra)


def list_instances(ck: Path, archs: list[str], *, api: str = APIS, hdims: list[int] | None = None,
                   receipt: int = RECEIPT, exclude=None) -> list[str]:
    """The kernel names generate() would write (CK's codegen --list_blobs: nothing generated, nothing compiled)."""
    import tempfile
    names = []
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "blobs.txt"
        for run_api, run_filters, optdim in codegen_runs(api, None, hdims):
            subprocess.run(codegen_cmd(ck, archs, run_api, run_filters, optdim, receipt, exclude,
                                       ["--list_blobs", str(listing)]),
                           check=True, cwd=fmha_example_dir(ck), capture_output=True)
            names += [Path(line.strip()).stem for line in listing.read_text().splitlines() if line.strip()]
    return sorted(n for n in names if "_api" not in n)


KERNEL_KINDS = ("fwd", "bwd_dot_do_o", "bwd_convert_dq", "bwd_dq_dk_dv", "fwd_splitkv", "fwd_splitkv_combine",
                "fwd_appendkv")
# The part of SHIPPED_COUNTS each kind belongs to.
KIND_GROUP = {"fwd": "fwd", "bwd_dot_do_o": "bwd", "bwd_convert_dq": "bwd", "bwd_dq_dk_dv": "bwd",
              "fwd_splitkv": "kvcache", "fwd_splitkv_combine": "kvcache", "fwd_appendkv": "kvcache"}


def kernel_kind(name: str) -> tuple[str, int]:
    """(kind, head dim bucket) of a generated kernel's name: kind is one of KERNEL_KINDS."""
    m = re.match(r"fmha_(fwd_splitkv_combine|fwd_splitkv|fwd_appendkv|fwd|bwd_dot_do_o|bwd_convert_dq|bwd)_d(\d+)_",
                 name)
    if not m:
        raise ValueError(f"not a CK FMHA kernel name: {name}")
    return ("bwd_dq_dk_dv" if m[1] == "bwd" else m[1]), int(m[2])


def group_totals(counts: dict[tuple[str, int], int]) -> dict[str, int]:
    """{"fwd": n, "bwd": n, "kvcache": n} of count_instances' result (SHIPPED_COUNTS' parts)."""
    totals = dict.fromkeys(SHIPPED_COUNTS, 0)
    for (kind, _), n in counts.items():
        totals[KIND_GROUP[kind]] += n
    return totals


def count_instances(names) -> dict[tuple[str, int], int]:
    """{(kind, head dim): number of kernels} of a list of kernel names (or generated files)."""
    counts: dict[tuple[str, int], int] = {}
    for n in names:
        key = kernel_kind(Path(str(n)).stem)
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def include_dirs(ck: Path) -> list[Path]:
    return [ROOT / "csrc", ck / "include", fmha_example_dir(ck)]
