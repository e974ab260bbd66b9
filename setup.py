"""fa_ck build.

On a ROCm build of PyTorch this compiles the Composable Kernel extension `fa_ck._ck`
(see build_ck.py). Anywhere else it installs the pure-Python package (Triton and
reference backends) and says in one line why the CK build was skipped.

Build isolation: pip builds in an isolated environment that has no torch (torch is
deliberately not a build requirement: pip would fetch a CPU/CUDA torch of several GB).
So the CK build needs `pip install --no-build-isolation .`. When setup.py finds itself
isolated while the environment pip was started from has a ROCm torch, it stops and
says exactly that, rather than silently installing without the kernels.

Environment: FA_CK_ARCHS (gfx942; also gfx90a, gfx950, native), FA_CK_HDIMS (e.g. 64,128:
fewer kernels, faster build), MAX_JOBS, CK_DIR, FA_CK_BUILD=0 (never build CK) / 1 (fail
if CK cannot be built).
"""
import os
import subprocess
import sys

from setuptools import setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_ck  # noqa: E402


def _torch_hip():
    """(importable, torch.version.hip or None) for the torch this build can see."""
    try:
        import torch
    except ImportError:
        return False, None
    return True, getattr(torch.version, "hip", None)


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


def outer_torch_hip(environ=os.environ):
    """torch.version.hip of the interpreter's own environment, seen from outside pip's isolation."""
    code = "import torch; print(getattr(torch.version, 'hip', None) or '')"
    try:
        r = subprocess.run([sys.executable, "-c", code], env=outer_env(environ),
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def decide(environ=os.environ):
    """('build', hip_version) or ('skip', reason); raises SystemExit when the user must act."""
    want = environ.get("FA_CK_BUILD", "")
    if want == "0":
        return "skip", "FA_CK_BUILD=0"
    has_torch, hip = _torch_hip()
    if hip:
        return "build", hip
    if not has_torch:
        outer = outer_torch_hip(environ)
        if outer:
            raise SystemExit(
                f"fa_ck: this environment has a ROCm torch (HIP {outer}), but pip's build isolation hides it "
                "from the build. Run:  pip install --no-build-isolation .   "
                "(or FA_CK_BUILD=0 pip install .  for the pure-Python package without CK kernels)")
        reason = "no torch importable in the build environment"
    else:
        import torch
        reason = f"torch {torch.__version__} is not a ROCm build"
    if want == "1":
        raise SystemExit(f"fa_ck: FA_CK_BUILD=1 but the CK extension cannot be built: {reason}")
    return "skip", reason


def ck_extension():
    """The fa_ck._ck extension: our csrc glue plus CK's generated instances, compiled by hipcc."""
    from pathlib import Path
    from torch.utils.cpp_extension import CUDAExtension

    try:
        ck = build_ck.find_ck()
        archs = build_ck.parse_archs(os.environ.get("FA_CK_ARCHS"))
        hdims = build_ck.parse_hdims(os.environ.get("FA_CK_HDIMS"))
    except (build_ck.CKNotFound, ValueError) as e:
        raise SystemExit(f"fa_ck: {e}")
    gen_dir = Path("build") / "ck_gen"      # a build directory: never committed (.gitignore: build/)
    # torch's cpp_extension sends only .cu/.hip files to hipcc: CK's generated .cpp are HIP sources.
    sources = []
    for cpp in build_ck.generate(ck, gen_dir, archs, hdims=hdims):
        hip = cpp.with_suffix(".hip")
        cpp.replace(hip)
        sources.append(str(hip))
    glue = ["csrc/ck_fwd.hip", "csrc/ck_bwd.hip", "csrc/binding.cpp"]
    arch_flags = [f"--offload-arch={a}" for a in archs]
    hip_flags = build_ck.CK_HIP_FLAGS + build_ck.ROCM_ONLY_FLAGS + build_ck.CK_DEFINES + arch_flags
    cxx_flags = ["-O3", "-std=c++20", f"-DFA_CK_HDIMS_LIST={','.join(map(str, hdims))}"]
    print(f"fa_ck: building CK extension for {','.join(archs)}: {len(sources)} generated instances "
          f"(head dims {hdims}) from {ck}; MAX_JOBS={os.environ.get('MAX_JOBS', 'auto')}")
    return CUDAExtension(
        name="fa_ck._ck",
        sources=glue + sources,
        include_dirs=[str(p) for p in build_ck.include_dirs(ck)],
        extra_compile_args={"cxx": cxx_flags, "nvcc": hip_flags},
    )


def main():
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
