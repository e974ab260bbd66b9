"""fa_ck build.

On a ROCm build of PyTorch this compiles the Composable Kernel extension `fa_ck._ck`
(see build_ck.py) with the ROCm SDK's hipcc. Anywhere else it installs the pure-Python
package (Triton and reference backends) and says in one line why the CK build was skipped.

Build isolation: pip, uv and `python -m build` build in an isolated environment that has
no torch (torch is deliberately not a build requirement: they would fetch a CPU/CUDA torch
of several GB). So the CK build needs `pip install --no-build-isolation .` (or
`uv pip install --no-build-isolation .`). When setup.py sees no torch while the machine has
a ROCm SDK, or the environment pip was started from has a ROCm torch, it stops and says
exactly that, rather than silently installing without the kernels.

Making an sdist (`python setup.py sdist`, `python -m build --sdist`) decides nothing: the
sdist carries setup.py, build_ck.py and csrc/ but not CK, which its build takes from CK_DIR.

Environment: FA_CK_ARCHS (gfx942; also gfx90a, gfx950, native), FA_CK_HDIMS (e.g. 64,128:
fewer kernels, faster build), MAX_JOBS, CK_DIR, ROCM_HOME, FA_CK_BUILD=0 (never build CK) /
1 (fail if CK cannot be built).
"""
import os
import subprocess
import sys
import tempfile

from setuptools import setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_ck  # noqa: E402

# setup.py commands that only describe or pack the sources: they never need torch or ROCm.
METADATA_COMMANDS = {"sdist", "egg_info", "dist_info", "check"}
BUILD_COMMANDS = {"build", "build_ext", "build_py", "bdist", "bdist_wheel", "bdist_egg", "install",
                  "develop", "editable_wheel"}
NO_ISOLATION = ("pip install --no-build-isolation .   (uv: uv pip install --no-build-isolation . ; "
                "pypa/build: python -m build --no-isolation)")
PURE_PYTHON = "or FA_CK_BUILD=0 for the pure-Python package without CK kernels (triton, reference backends)"


def _torch_hip():
    """(importable, torch.version.hip or None) for the torch this build can see."""
    try:
        import torch
    except ImportError:
        return False, None
    return True, getattr(torch.version, "hip", None)


def metadata_only(argv):
    """True when setup.py was asked only for metadata or an sdist (what pip/uv/build run first)."""
    words = set(argv[1:])
    return bool(words & METADATA_COMMANDS) and not words & BUILD_COMMANDS


def outer_env(environ):
    """The environment pip was started from: pip's isolation adds PYTHONNOUSERSITE and a
    PYTHONPATH entry in its pip-build-env-* directory whose sitecustomize hides site-packages."""
    env = dict(environ)
    env.pop("PYTHONNOUSERSITE", None)
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and "pip-build-env-" not in p]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        env.pop("PYTHONPATH", None)
    return env


def outer_torch(environ=os.environ):
    """(torch.__version__, torch.version.hip or None) of the interpreter's own environment, seen from
    outside pip's isolation; None when no torch is found there."""
    code = "import torch; print(torch.__version__); print(getattr(torch.version, 'hip', None) or '')"
    try:
        r = subprocess.run([sys.executable, "-c", code], env=outer_env(environ),
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = r.stdout.splitlines()
    if r.returncode != 0 or not lines:
        return None
    return lines[0].strip(), (lines[1].strip() if len(lines) > 1 else "") or None


def build_isolation(environ=os.environ, prefix=sys.prefix, base_prefix=sys.base_prefix):
    """Which isolated build environment this interpreter runs in, in words; None when none is seen."""
    if any("pip-build-env-" in p for p in environ.get("PYTHONPATH", "").split(os.pathsep)):
        return "pip's build isolation"
    parts = os.path.normpath(prefix).split(os.sep)
    if any(p.startswith("build-env-") for p in parts):
        return "python -m build's isolated environment"
    if any(p.startswith("builds-v") for p in parts) or (environ.get("UV") and prefix != base_prefix):
        return "uv's build isolation"
    if prefix != base_prefix and os.path.realpath(prefix).startswith(os.path.realpath(tempfile.gettempdir())):
        return "a temporary virtual environment, likely a build frontend's isolation"
    return None


def find_rocm(environ=os.environ):
    """build_ck.find_rocm, with a bad ROCM_HOME/ROCM_PATH as a SystemExit that names it."""
    try:
        return build_ck.find_rocm(environ)
    except ValueError as e:
        raise SystemExit(f"fa_ck: {e}")


def no_rocm_sdk(hip):
    return (f"fa_ck: torch is a ROCm build (HIP {hip}) but no ROCm SDK was found (ROCM_HOME and ROCM_PATH "
            "unset, no hipcc on PATH, no /opt/rocm/bin/hipcc); the CK kernels are compiled by ROCm's hipcc. "
            "Install the ROCm HIP SDK (hipcc) and set ROCM_HOME to it (e.g. ROCM_HOME=/opt/rocm), "
            f"{PURE_PYTHON}.")


def decide(environ=os.environ, prefix=sys.prefix, base_prefix=sys.base_prefix):
    """('build', hip_version) or ('skip', reason); raises SystemExit when the user must act."""
    want = environ.get("FA_CK_BUILD", "")
    if want not in ("", "0", "1"):
        raise SystemExit(f"fa_ck: FA_CK_BUILD must be 0, 1 or unset, not {want!r}")
    if want == "0":
        return "skip", "FA_CK_BUILD=0"
    has_torch, hip = _torch_hip()
    if hip:
        if find_rocm(environ) is None:
            raise SystemExit(no_rocm_sdk(hip))
        return "build", hip
    if not has_torch:
        isolation = build_isolation(environ, prefix, base_prefix)
        outer_version, outer_hip = outer_torch(environ) or (None, None)
        if outer_hip:
            raise SystemExit(
                f"fa_ck: this environment has a ROCm torch (HIP {outer_hip}), but {isolation or 'build isolation'} "
                f"hides it from the build. Run:  {NO_ISOLATION};  {PURE_PYTHON}.")
        rocm = find_rocm(environ)
        if rocm is not None and outer_version:
            reason = f"torch {outer_version}, outside {isolation or 'build isolation'}, is not a ROCm build"
        elif rocm is not None:
            where = f"this build runs in {isolation}" if isolation else "torch is not installed here"
            raise SystemExit(
                f"fa_ck: this machine has a ROCm SDK ({rocm}), but torch is not importable by the build "
                f"({where}), so the CK kernels cannot be built. Install ROCm's PyTorch in your environment "
                f"and build without isolation:  {NO_ISOLATION};  {PURE_PYTHON}.")
        else:
            reason = "no torch importable in the build environment"
    else:
        import torch
        reason = f"torch {torch.__version__} is not a ROCm build"
    if want == "1":
        raise SystemExit(f"fa_ck: FA_CK_BUILD=1 but the CK extension cannot be built: {reason}")
    return "skip", reason


def hip_version(rocm, torch_hip):
    """(version tuple, where it came from): the SDK's own HIP version, else the one torch was built with."""
    sdk = build_ck.sdk_hip_version(rocm)
    if sdk is not None:
        return sdk, f"the ROCm SDK at {rocm}"
    try:
        return build_ck.parse_hip_version(torch_hip, "torch.version.hip"), "torch.version.hip"
    except ValueError as e:
        raise SystemExit(f"fa_ck: {e}")


def ck_extension(environ=os.environ, gen_dir=None):
    """The fa_ck._ck extension: our csrc glue plus CK's generated instances, compiled by hipcc."""
    from pathlib import Path

    import torch
    from torch.utils import cpp_extension

    rocm = find_rocm(environ)
    # Without ROCM_HOME torch's IS_HIP_EXTENSION stays off and CUDAExtension asks for CUDA_HOME instead.
    if rocm is None:
        raise SystemExit(no_rocm_sdk(torch.version.hip))
    if not cpp_extension.IS_HIP_EXTENSION:
        raise SystemExit(f"fa_ck: torch.utils.cpp_extension did not take the ROCm SDK at {rocm} (its ROCM_HOME "
                         f"is {cpp_extension.ROCM_HOME}), so it would compile for CUDA: set ROCM_HOME={rocm} and "
                         "run again")
    try:
        ck = build_ck.find_ck(environ=environ)
        archs = build_ck.parse_archs(environ.get("FA_CK_ARCHS"))
        hdims = build_ck.parse_hdims(environ.get("FA_CK_HDIMS"))
        build_ck.parse_max_jobs(environ.get("MAX_JOBS"))
    except (build_ck.CKNotFound, ValueError) as e:
        raise SystemExit(f"fa_ck: {e}")
    version, version_from = hip_version(Path(rocm), torch.version.hip)
    gen_dir = Path(gen_dir or Path("build") / "ck_gen")   # a build directory: never committed (.gitignore: build/)
    # torch's cpp_extension sends only .cu/.hip files to hipcc: CK's generated .cpp are HIP sources.
    sources = []
    for cpp in build_ck.generate(ck, gen_dir, archs, hdims=hdims):
        hip = cpp.with_suffix(".hip")
        cpp.replace(hip)
        sources.append(str(hip))
    glue = ["csrc/ck_fwd.hip", "csrc/ck_bwd.hip", "csrc/binding.cpp"]
    arch_flags = [f"--offload-arch={a}" for a in archs]
    hip_flags = build_ck.ck_hip_flags(version) + arch_flags
    cxx_flags = ["-O3", "-std=c++20", f"-DFA_CK_HDIMS_LIST={','.join(map(str, hdims))}"]
    print(f"fa_ck: building CK extension for {','.join(archs)} with HIP {'.'.join(map(str, version))} "
          f"(from {version_from}): {len(sources)} generated instances (head dims {hdims}) from {ck}; "
          f"MAX_JOBS={environ.get('MAX_JOBS', 'auto')}")
    return cpp_extension.CUDAExtension(
        name="fa_ck._ck",
        sources=glue + sources,
        include_dirs=[str(p) for p in build_ck.include_dirs(ck)],
        extra_compile_args={"cxx": cxx_flags, "nvcc": hip_flags},
    )


def main():
    if metadata_only(sys.argv):
        setup()
        return
    action, detail = decide()
    if action == "skip":
        print(f"fa_ck: CK build skipped ({detail}); installing the pure-Python package (triton, reference backends)")
        setup()
        return
    from torch.utils.cpp_extension import BuildExtension
    # ninja compiles in parallel and honours MAX_JOBS (torch's BuildExtension reads it).
    setup(ext_modules=[ck_extension()],
          cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)})


if __name__ == "__main__":
    main()
