"""setup.py's ck_extension() and build_ext against a faked ROCm, CPU only.

The fakes: torch.version.hip and torch's cpp_extension ROCm state monkeypatched; a temporary ROCM_HOME
whose bin/hipcc (and the host c++ and linker) log their command lines and write empty outputs, with the
SDK's HIP version in include/hip/hip_version.h or from bin/hipconfig; a tiny CK tree whose codegen logs
its arguments and writes a few instance files. Checked: sources, defines, --offload-arch per FA_CK_ARCHS
and the flags CK gates by HIP version, in ck_extension()'s arguments and in hipcc's actual command lines.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch
from torch.utils import cpp_extension

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import build_ck  # noqa: E402
import ck_compile_check as cc  # noqa: E402
import setup as setup_mod  # noqa: E402  (setup() runs only under __main__)

COERCE = ["-mllvm", "-amdgpu-coerce-illegal-types=1"]
INLINE = ["-mllvm", "-amdgpu-early-inline-all=true", "-mllvm", "-amdgpu-function-calls=false"]
POST_MISCHED = ["-mllvm", "-enable-post-misched=0"]

LOGGER = """#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_ROCM_LOG"], "a") as f:
    f.write(json.dumps({{"tool": os.path.basename(sys.argv[0]), "argv": args}}) + "\\n")
{body}
"""
COMPILER_BODY = """
if "--version" in args:
    print("{version}")
if "-o" in args:
    out = args[args.index("-o") + 1]
    open(out, "w").close()
    if "-MF" in args:
        src = args[len(args) - 1 - args[::-1].index("-c") + 1]
        with open(args[args.index("-MF") + 1], "w") as f:
            f.write(out + ": " + src + "\\n")
"""
CODEGEN_BODY = """
out = args[args.index("--output_dir") + 1]
names = ["fmha_fwd_api.cpp", "fmha_bwd_api.cpp", "fmha_fwd_d64_fp16_batch_b128x64_lse_nmask.cpp",
         "fmha_bwd_d64_bf16_group_deterministic.cpp"]
for n in names:
    open(os.path.join(out, n), "w").write("// generated\\n")
"""


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LOGGER.format(python=sys.executable, body=body))
    path.chmod(0o755)
    return path


def fake_rocm(root: Path, version: str, where: str = "header") -> Path:
    """ROCM_HOME with a logging bin/hipcc; the SDK's HIP version in hip_version.h, hipconfig, or nowhere."""
    _script(root / "bin" / "hipcc", COMPILER_BODY.format(version=version))
    major, minor, patch = build_ck.parse_hip_version(version)
    if where == "header":
        (root / "include" / "hip").mkdir(parents=True)
        (root / "include" / "hip" / "hip_version.h").write_text(
            f"#define HIP_VERSION_MAJOR {major}\n#define HIP_VERSION_MINOR {minor}\n"
            f"#define HIP_VERSION_PATCH {patch}\n#define HIP_VERSION_GITHASH \"deadbeef\"\n")
    elif where == "hipconfig":
        _script(root / "bin" / "hipconfig", f"print('{version}-65d174c3e', end='')")
    return root


def fake_ck(root: Path) -> Path:
    (root / "include" / "ck_tile").mkdir(parents=True)
    _script(root / "example" / "ck_tile" / "01_fmha" / "generate.py", CODEGEN_BODY)
    return root


def read_log(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def rocm_state(tmp_path, monkeypatch):
    """Fake ROCm as torch's cpp_extension would see it on a ROCm machine; returns a configurator."""
    log = tmp_path / "calls.jsonl"
    project = tmp_path / "project"            # CUDAExtension hipifies in cwd: never in the checkout
    shutil.copytree(ROOT / "csrc", project / "csrc")
    monkeypatch.chdir(project)
    monkeypatch.setenv("FAKE_ROCM_LOG", str(log))
    ck = fake_ck(tmp_path / "ck")

    def configure(version="6.2.41134", where="header", torch_hip="6.2.41133-dd7f95766", archs="gfx942", hdims=None):
        rocm = fake_rocm(tmp_path / f"rocm-{version}-{where}", version, where)
        monkeypatch.setattr(torch.version, "hip", torch_hip)
        monkeypatch.setattr(cpp_extension, "ROCM_HOME", str(rocm))
        monkeypatch.setattr(cpp_extension, "HIP_HOME", None)
        monkeypatch.setattr(cpp_extension, "IS_HIP_EXTENSION", True)
        env = {"PATH": "/nonexistent", "ROCM_HOME": str(rocm), "CK_DIR": str(ck), "FA_CK_ARCHS": archs}
        if hdims:
            env["FA_CK_HDIMS"] = hdims
        return env, rocm
    configure.log, configure.tmp, configure.ck = log, tmp_path, ck
    return configure


def nvcc_flags(ext):
    return ext.extra_compile_args["nvcc"]


def compiled_source(argv):
    """The file a compiler command compiles: what follows its last -c (torch's ninja rules repeat -c)."""
    return Path(argv[len(argv) - 1 - argv[::-1].index("-c") + 1]).name


def contains(flags, seq):
    return any(flags[i:i + len(seq)] == seq for i in range(len(flags) - len(seq) + 1))


# ---------------------------------------------------------------- ck_extension()

def test_ck_extension_sources_defines_archs(rocm_state, capsys):
    env, _ = rocm_state(archs="gfx942,gfx950", hdims="128,64")
    ext = setup_mod.ck_extension(env, gen_dir=rocm_state.tmp / "gen")
    assert ext.name == "fa_ck._ck"
    srcs = sorted(ext.sources)
    assert {"csrc/ck_fwd.hip", "csrc/ck_bwd.hip", "csrc/binding.cpp"} <= set(srcs)
    generated = [s for s in srcs if "gen" in Path(s).parts]
    assert len(generated) == 4 and all(s.endswith(".hip") for s in generated)   # CK's .cpp renamed for hipcc
    assert not list((rocm_state.tmp / "gen").glob("*.cpp"))
    flags = nvcc_flags(ext)
    assert [f for f in flags if "offload-arch" in f] == ["--offload-arch=gfx942", "--offload-arch=gfx950"]
    assert all(d in flags for d in build_ck.CK_DEFINES)
    assert "-DFA_CK_HDIMS_LIST=64,128" in ext.extra_compile_args["cxx"]
    assert str(rocm_state.ck / "include") in ext.include_dirs
    (call,) = [c for c in read_log(rocm_state.log) if c["tool"] == "generate.py"]
    a = call["argv"]
    assert a[a.index("--targets") + 1] == "gfx942,gfx950" and a[a.index("--optdim") + 1] == "64,128"
    assert a[a.index("--receipt") + 1] == "2"
    out = capsys.readouterr().out
    assert "with HIP 6.2.41134 (from the ROCm SDK at" in out and "gfx942,gfx950" in out


@pytest.mark.parametrize("version, coerce, inline, post_misched", [
    ("6.0.32830", False, False, False),
    ("6.1.40091", False, False, True),
    ("6.2.41133", True, True, True),       # ROCm 6.2.0: the first CK's CMake adds coerce and inlining for
    ("6.3.42131", True, True, True),
    ("7.1.25424", True, True, True),
    ("7.2.26015", False, True, True),      # ROCm 7.2's LLVM no longer has -amdgpu-coerce-illegal-types
])
def test_flags_follow_the_sdk_hip_version(rocm_state, version, coerce, inline, post_misched):
    # torch's own HIP differs on purpose: the SDK that compiles decides the flags
    env, _ = rocm_state(version=version, torch_hip="6.2.41133-dd7f95766")
    flags = nvcc_flags(setup_mod.ck_extension(env, gen_dir=rocm_state.tmp / "gen"))
    assert contains(flags, COERCE) == coerce
    assert contains(flags, INLINE) == inline
    assert contains(flags, POST_MISCHED) == post_misched
    assert contains(flags, ["-mllvm", "--lsr-drop-solution=1"]) and "-fno-offload-uniform-block" in flags
    assert flags == (build_ck.CK_BASE_HIP_FLAGS + build_ck.hip_version_flags(version) + build_ck.CK_DEFINES
                     + ["--offload-arch=gfx942"])


def test_hip_version_from_hipconfig_then_torch(rocm_state, capsys):
    env, _ = rocm_state(version="7.2.26015", where="hipconfig", torch_hip="6.2.41133-dd7f95766")
    flags = nvcc_flags(setup_mod.ck_extension(env, gen_dir=rocm_state.tmp / "g1"))
    assert not contains(flags, COERCE) and "HIP 7.2.26015" in capsys.readouterr().out
    env, _ = rocm_state(version="6.2.41134", where="nowhere", torch_hip="6.2.41133-dd7f95766")
    flags = nvcc_flags(setup_mod.ck_extension(env, gen_dir=rocm_state.tmp / "g2"))
    assert contains(flags, COERCE) and "HIP 6.2.41133 (from torch.version.hip)" in capsys.readouterr().out


def test_hip_version_flags_table():
    assert build_ck.hip_version_flags("6.2.41133-dd7f95766") == build_ck.hip_version_flags((6, 2, 41133))
    assert contains(build_ck.hip_version_flags("6.2.41133"), COERCE)
    assert not contains(build_ck.hip_version_flags("6.2.41132"), COERCE + INLINE[:2])
    assert build_ck.hip_version_flags("5.4.0") == []
    with pytest.raises(ValueError, match="torch.version.hip: cannot read a HIP version from 'rocm'"):
        build_ck.parse_hip_version("rocm", "torch.version.hip")
    # the compile check's list (upstream clang) is the HIP 6.2 set less the ROCm-only inlining pair
    gated = build_ck.hip_version_flags("6.2.41134")
    assert all(f in build_ck.CK_HIP_FLAGS for f in gated if f not in COERCE + build_ck.ROCM_ONLY_FLAGS)


def test_torch_without_rocm_home_gets_a_rocm_message(rocm_state, monkeypatch):
    env, rocm = rocm_state()
    # what torch sets when it finds no ROCm: CUDAExtension would then ask for CUDA_HOME
    monkeypatch.setattr(cpp_extension, "IS_HIP_EXTENSION", False)
    monkeypatch.setattr(cpp_extension, "ROCM_HOME", None)
    with pytest.raises(SystemExit, match=f"did not take the ROCm SDK at {rocm}.*set ROCM_HOME={rocm}") as e:
        setup_mod.ck_extension(env, gen_dir=rocm_state.tmp / "gen")
    assert "CUDA_HOME" not in str(e.value)
    monkeypatch.setattr(build_ck, "find_rocm", lambda environ: None)      # no SDK anywhere, /opt/rocm included
    with pytest.raises(SystemExit, match="no ROCm SDK was found.*ROCM_HOME") as e:
        setup_mod.ck_extension(env, gen_dir=rocm_state.tmp / "gen")
    assert "CUDA_HOME" not in str(e.value)


def test_bad_settings_name_the_variable(rocm_state):
    env, _ = rocm_state(archs="gfx1100")
    with pytest.raises(SystemExit, match="FA_CK_ARCHS: unsupported arch 'gfx1100'"):
        setup_mod.ck_extension(env, gen_dir=rocm_state.tmp / "gen")
    env, _ = rocm_state(version="6.3.42131", hdims="80")
    with pytest.raises(SystemExit, match="FA_CK_HDIMS"):
        setup_mod.ck_extension(env, gen_dir=rocm_state.tmp / "gen")
    for bad in ("0", "many", "-2"):
        with pytest.raises(SystemExit, match=f"MAX_JOBS must be a positive integer, not '{bad}'"):
            setup_mod.ck_extension({**env, "FA_CK_HDIMS": "64", "MAX_JOBS": bad}, gen_dir=rocm_state.tmp / "gen")
    with pytest.raises(SystemExit, match="CK_DIR=.* has no include/ck_tile"):
        setup_mod.ck_extension({**env, "FA_CK_HDIMS": "64", "CK_DIR": str(rocm_state.tmp)}, gen_dir=rocm_state.tmp)


# ---------------------------------------------------------------- build_ext with the fake compilers

@pytest.mark.parametrize("ninja", [True, False])
def test_build_ext_runs_fake_hipcc_with_our_flags(rocm_state, monkeypatch, ninja):
    from setuptools import Distribution

    env, rocm = rocm_state(version="6.2.41134", archs="gfx942,gfx90a", hdims="64")
    if ninja:       # torch's BuildExtension looks for ninja on PATH, else compiles one file at a time
        if not shutil.which("ninja"):
            pytest.skip("no ninja on PATH")
        env["PATH"] = os.path.dirname(shutil.which("ninja"))
    fake_cxx = _script(rocm_state.tmp / "hostbin" / "c++", COMPILER_BODY.format(version="fake c++"))
    for var, value in {"CC": fake_cxx, "CXX": fake_cxx, "LDSHARED": f"{fake_cxx} -shared", "MAX_JOBS": "2",
                       "TORCH_DONT_CHECK_COMPILER_ABI": "1", "PYTORCH_ROCM_ARCH": "gfx1100",
                       **env}.items():
        monkeypatch.setenv(var, str(value))
    ext = setup_mod.ck_extension(dict(os.environ), gen_dir="build/ck_gen")
    build = rocm_state.tmp / "b"
    dist = Distribution({"name": "fa_ck", "ext_modules": [ext],
                         "cmdclass": {"build_ext": cpp_extension.BuildExtension.with_options(use_ninja=True)}})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_temp, cmd.build_lib = str(build / "temp"), str(build / "lib")
    dist.run_command("build_ext")
    assert (build / "temp" / "build.ninja").exists() == ninja

    calls = read_log(rocm_state.log)
    hipcc = [c["argv"] for c in calls if c["tool"] == "hipcc"]
    compiled = sorted(compiled_source(a) for a in hipcc)
    assert compiled == sorted(["ck_fwd.hip", "ck_bwd.hip", "fmha_fwd_api.hip", "fmha_bwd_api.hip",
                               "fmha_fwd_d64_fp16_batch_b128x64_lse_nmask.hip",
                               "fmha_bwd_d64_bf16_group_deterministic.hip"])
    for a in hipcc:
        assert [f for f in a if "offload-arch" in f] == ["--offload-arch=gfx942", "--offload-arch=gfx90a"]
        assert contains(a, COERCE) and contains(a, INLINE)
        assert all(d in a for d in build_ck.CK_DEFINES) and "-DTORCH_EXTENSION_NAME=_ck" in a
    host = [c["argv"] for c in calls if c["tool"] == "c++"]
    host_compiles = [a for a in host if "-c" in a]
    assert [compiled_source(a) for a in host_compiles] == ["binding.cpp"]
    assert "-DFA_CK_HDIMS_LIST=64" in host_compiles[0]
    (link,) = [a for a in host if "-shared" in a]
    assert link[link.index("-o") + 1].endswith(".so") and sum(x.endswith(".o") for x in link) == 7



def test_ck_extension_with_the_real_ck_codegen(rocm_state):
    ck = cc.ck_tree_here()
    if ck is None:
        pytest.skip("no CK tree (submodule, CK_DIR or .ckcache)")
    env, _ = rocm_state(hdims="64")
    ext = setup_mod.ck_extension({**env, "CK_DIR": str(ck)}, gen_dir=rocm_state.tmp / "gen")
    names = [Path(s).name for s in ext.sources]
    assert "fmha_fwd_api.hip" in names and "fmha_bwd_api.hip" in names
    fwd = [n for n in names if n.startswith("fmha_fwd_d")]
    assert fwd and all("_d64_" in n and "_lse_" in n and n.endswith(".hip") for n in fwd)
