"""setup.py's decision, CPU only: ROCm torch with and without a ROCm SDK, and builds isolated by pip,
uv or `python -m build` (simulated through the environment and sys.prefix, never run)."""
from __future__ import annotations

import os
import subprocess
import sys
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import build_ck  # noqa: E402
import setup as setup_mod  # noqa: E402  (setup() runs only under __main__)

NO_TORCH = (False, None)
ROCM_TORCH = (True, "6.2.41133-dd7f95766")


def fake_rocm(root: Path) -> Path:
    """A ROCm install as torch and setup.py look for it: bin/hipcc."""
    (root / "bin").mkdir(parents=True)
    hipcc = root / "bin" / "hipcc"
    hipcc.write_text("#!/bin/sh\nexit 0\n")
    hipcc.chmod(0o755)
    return root


@pytest.fixture
def torch_state(monkeypatch):
    """Set what setup.py's torch probes see: (importable, torch.version.hip) and the outer env's HIP."""
    def set_(inner, outer=None):
        """outer: None (no torch outside the isolation) or (torch.__version__, torch.version.hip)."""
        monkeypatch.setattr(setup_mod, "_torch_hip", lambda: inner)
        monkeypatch.setattr(setup_mod, "outer_torch", lambda environ=None: outer)
    return set_


def env(**kw):
    """A bare environment (no hipcc on PATH, no ROCM_HOME) plus kw."""
    return {"PATH": "/nonexistent", **kw}


# ---------------------------------------------------------------- a ROCm torch

def test_rocm_torch_without_sdk_says_rocm_home_not_cuda_home(torch_state, monkeypatch):
    torch_state(ROCM_TORCH)
    monkeypatch.setattr(build_ck, "find_rocm", lambda environ: None)     # no /opt/rocm either
    with pytest.raises(SystemExit) as e:
        setup_mod.decide(env())
    msg = str(e.value)
    assert "ROCM_HOME" in msg and "hipcc" in msg and "HIP 6.2.41133" in msg and "FA_CK_BUILD=0" in msg
    assert "CUDA_HOME" not in msg


def test_rocm_torch_with_sdk_builds(torch_state, tmp_path):
    torch_state(ROCM_TORCH)
    rocm = fake_rocm(tmp_path / "rocm")
    assert setup_mod.decide(env(ROCM_HOME=str(rocm))) == ("build", ROCM_TORCH[1])
    assert setup_mod.decide(env(ROCM_PATH=str(rocm))) == ("build", ROCM_TORCH[1])
    # hipcc on PATH: ROCM_HOME is its bin/'s parent, as torch's cpp_extension finds it
    assert setup_mod.decide(env(PATH=str(rocm / "bin"))) == ("build", ROCM_TORCH[1])
    assert build_ck.find_rocm(env(PATH=str(rocm / "bin")), default="") == rocm


def test_rocm_home_without_hipcc_is_an_error_naming_it(torch_state, tmp_path):
    torch_state(ROCM_TORCH)
    with pytest.raises(SystemExit, match="ROCM_HOME=.* has no bin/hipcc"):
        setup_mod.decide(env(ROCM_HOME=str(tmp_path)))


def test_build_off_switch_wins_over_a_missing_sdk(torch_state, monkeypatch):
    torch_state(ROCM_TORCH)
    monkeypatch.setattr(build_ck, "find_rocm", lambda environ: None)
    assert setup_mod.decide(env(FA_CK_BUILD="0")) == ("skip", "FA_CK_BUILD=0")


def test_bad_build_switch_names_the_variable(torch_state):
    torch_state(ROCM_TORCH)
    with pytest.raises(SystemExit, match="FA_CK_BUILD must be 0, 1 or unset, not 'yes'"):
        setup_mod.decide(env(FA_CK_BUILD="yes"))


# ---------------------------------------------------------------- no torch: isolated builds

UV_PREFIX = "/home/u/.cache/uv/builds-v0/.tmpAbC123"
BUILD_PREFIX = "/tmp/build-env-k3j2l1"


@pytest.mark.parametrize("prefix, frontend", [
    (UV_PREFIX, "uv's build isolation"),
    (BUILD_PREFIX, "python -m build's isolated environment"),
])
def test_isolated_without_torch_on_a_rocm_machine_fails_loudly(torch_state, tmp_path, prefix, frontend):
    torch_state(NO_TORCH)
    rocm = fake_rocm(tmp_path / "rocm")
    with pytest.raises(SystemExit) as e:
        setup_mod.decide(env(ROCM_HOME=str(rocm)), prefix=prefix, base_prefix="/usr")
    msg = str(e.value)
    assert frontend in msg and str(rocm) in msg
    assert "pip install --no-build-isolation ." in msg and "uv pip install --no-build-isolation ." in msg
    assert "python -m build --no-isolation" in msg and "FA_CK_BUILD=0" in msg


def test_pip_isolation_is_named(tmp_path):
    pythonpath = os.pathsep.join(["/tmp/pip-build-env-x/site", "/mine"])
    assert setup_mod.build_isolation({"PYTHONPATH": pythonpath}, "/usr", "/usr") == "pip's build isolation"
    assert setup_mod.build_isolation({}, "/usr", "/usr") is None
    assert setup_mod.build_isolation({"UV": "/usr/bin/uv"}, "/x/venv", "/usr") == "uv's build isolation"


@pytest.mark.parametrize("prefix", [UV_PREFIX, BUILD_PREFIX])
def test_isolated_without_torch_elsewhere_installs_pure_python(torch_state, monkeypatch, prefix):
    torch_state(NO_TORCH)
    monkeypatch.setattr(build_ck, "find_rocm", lambda environ: None)
    assert setup_mod.decide(env(), prefix=prefix, base_prefix="/usr") == \
        ("skip", "no torch importable in the build environment")


def test_isolated_with_rocm_torch_outside_names_the_frontend(torch_state, monkeypatch):
    torch_state(NO_TORCH, outer=("2.9.0+rocm6.3", "6.3.42131"))
    monkeypatch.setattr(build_ck, "find_rocm", lambda environ: None)
    with pytest.raises(SystemExit, match="HIP 6.3.42131.*uv's build isolation.*--no-build-isolation"):
        setup_mod.decide(env(), prefix=UV_PREFIX, base_prefix="/usr")


def test_pip_isolated_with_cpu_torch_outside_on_rocm_machine_installs_pure_python(torch_state, tmp_path):
    torch_state(NO_TORCH, outer=("2.13.0+cpu", None))
    rocm = fake_rocm(tmp_path / "rocm")
    pythonpath = os.pathsep.join(["/tmp/pip-build-env-x/site", "/tmp/pip-build-env-x/overlay"])
    assert setup_mod.decide(env(ROCM_HOME=str(rocm), PYTHONPATH=pythonpath), prefix="/usr", base_prefix="/usr") == \
        ("skip", "torch 2.13.0+cpu, outside pip's build isolation, is not a ROCm build")


def test_isolated_on_rocm_machine_opt_out(torch_state, tmp_path):
    torch_state(NO_TORCH)
    rocm = fake_rocm(tmp_path / "rocm")
    assert setup_mod.decide(env(ROCM_HOME=str(rocm), FA_CK_BUILD="0"), prefix=UV_PREFIX,
                            base_prefix="/usr") == ("skip", "FA_CK_BUILD=0")


def test_metadata_commands_decide_nothing():
    assert setup_mod.metadata_only(["setup.py", "sdist", "--formats", "gztar", "--dist-dir", "/tmp/x"])
    assert setup_mod.metadata_only(["setup.py", "egg_info"]) and setup_mod.metadata_only(["setup.py", "dist_info"])
    assert not setup_mod.metadata_only(["setup.py", "bdist_wheel", "--dist-dir", "/tmp/x"])
    assert not setup_mod.metadata_only(["setup.py", "egg_info", "build_ext"])
    assert not setup_mod.metadata_only(["setup.py", "--version"])


# ---------------------------------------------------------------- the same, as a real isolated interpreter

def _isolated_python(venv_dir: Path) -> Path:
    """A venv without torch, as uv or pypa/build make one: setuptools reachable, torch not."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv_dir)], check=True, timeout=60)
    import setuptools
    site = Path(setuptools.__file__).parents[1]
    overlay = venv_dir / "overlay"
    overlay.mkdir()
    for name in ("setuptools", "_distutils_hack", "pkg_resources"):
        if (site / name).exists():
            (overlay / name).symlink_to(site / name)
    py = venv_dir / "bin" / "python"
    assert subprocess.run([py, "-c", "import torch"], env={"PYTHONPATH": str(overlay)},
                          capture_output=True).returncode != 0
    return py


@pytest.mark.parametrize("venv_rel, frontend", [
    ("uvcache/builds-v0/.tmpQ1w2E3", "uv's build isolation"),
    ("build-env-a1b2c3", "python -m build's isolated environment"),
])
def test_isolated_interpreter_on_rocm_machine(tmp_path, venv_rel, frontend):
    py = _isolated_python(tmp_path / venv_rel)
    rocm = fake_rocm(tmp_path / "rocm")
    base = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(py.parents[1] / "overlay"), "ROCM_HOME": str(rocm)}
    r = subprocess.run([py, "setup.py", "bdist_wheel", "--dist-dir", str(tmp_path / "dist")], cwd=ROOT, env=base,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and frontend in r.stderr and "--no-build-isolation" in r.stderr, r.stderr[-2000:]
    assert not (tmp_path / "dist").exists()
    # the sdist step of the same frontend needs no torch and must still work (in a copy: sdist stages in cwd)
    src, out = tmp_path / "src", tmp_path / "sdist"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "build", "dist", ".ckcache", "composable_kernel",
                                                             "*.egg-info", "__pycache__", ".venv"))
    r = subprocess.run([py, "setup.py", "-q", "sdist", "--dist-dir", str(out)],
                       cwd=src, env=base, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [p.name for p in out.iterdir()] == ["fa_ck-0.1.0.tar.gz"]


def test_ck_commit_is_the_submodule_pin():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-s", "composable_kernel"], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.split()[:2] == ["160000", build_ck.CK_COMMIT]


def test_missing_ck_names_ck_dir_and_commit(tmp_path):
    with pytest.raises(build_ck.CKNotFound) as e:
        build_ck.find_ck(tmp_path, environ={})
    assert "CK_DIR" in str(e.value) and build_ck.CK_COMMIT in str(e.value)
