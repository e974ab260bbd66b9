"""CPU tests of the CK build: setup.py's decisions, pip build isolation, the ck backend without
its extension, and (when clang-22 and a CK tree are present) the C++ argument mapping."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import build_ck  # noqa: E402
import ck_compile_check as cc  # noqa: E402
from ck_host import CLANG, ck_backend, clang_or_skip, host_run  # noqa: E402


def _setup(env_extra=None, pythonpath=None, args=("--version",)):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FA_CK_")}
    env.update(env_extra or {})
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, "setup.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)



# ---------------------------------------------------------------- setup.py

@pytest.mark.skipif(bool(getattr(torch.version, "hip", None)), reason="this is a ROCm torch")
def test_setup_skips_ck_with_one_line_on_non_rocm_torch():
    r = _setup()
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if line.startswith("fa_ck:")]
    assert len(lines) == 1 and "CK build skipped" in lines[0] and "not a ROCm build" in lines[0]


def test_setup_build_off_switch():
    r = _setup({"FA_CK_BUILD": "0"})
    assert r.returncode == 0 and "CK build skipped (FA_CK_BUILD=0)" in r.stdout


@pytest.mark.skipif(bool(getattr(torch.version, "hip", None)), reason="this is a ROCm torch")
def test_setup_forced_build_fails_clearly_without_rocm():
    r = _setup({"FA_CK_BUILD": "1"})
    assert r.returncode != 0 and "cannot be built" in r.stderr


def _fake_isolation(tmp_path, outer_hip):
    """pip's build isolation, mimicked: a pip-build-env-*/site dir on PYTHONPATH whose
    sitecustomize makes torch unimportable, and an 'outer' torch (a stub) the probe can find."""
    outer = tmp_path / "outer" / "torch"
    outer.mkdir(parents=True)
    (outer / "__init__.py").write_text(
        f"__version__ = '2.5.0'\nclass version:\n    hip = {outer_hip!r}\n    cuda = None\n")
    site = tmp_path / "pip-build-env-test" / "site"
    site.mkdir(parents=True)
    (site / "sitecustomize.py").write_text(textwrap.dedent("""
        import sys
        class _NoTorch:
            def find_spec(self, name, path=None, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ImportError("torch is not in the isolated build env")
        sys.meta_path.insert(0, _NoTorch())
    """))
    return os.pathsep.join([str(site), str(tmp_path / "outer")])


def test_isolated_build_with_rocm_outside_says_what_to_run(tmp_path):
    r = _setup({"PYTHONNOUSERSITE": "1"}, pythonpath=_fake_isolation(tmp_path, "6.2.41133"))
    assert r.returncode != 0
    assert "pip install --no-build-isolation ." in r.stderr and "HIP 6.2.41133" in r.stderr


def test_isolated_build_without_rocm_outside_installs_pure_python(tmp_path):
    r = _setup({"PYTHONNOUSERSITE": "1"}, pythonpath=_fake_isolation(tmp_path, None))
    assert r.returncode == 0, r.stderr
    assert "CK build skipped (no torch importable in the build environment)" in r.stdout


def test_outer_env_drops_only_pip_isolation():
    sys.path.insert(0, str(ROOT))
    import setup as setup_mod  # safe: setup() runs only under __main__
    env = setup_mod.outer_env({"PYTHONPATH": os.pathsep.join(["/tmp/pip-build-env-x/site", "/mine"]),
                               "PYTHONNOUSERSITE": "1", "HOME": "/root"})
    assert env == {"PYTHONPATH": "/mine", "HOME": "/root"}


# ---------------------------------------------------------------- build_ck

def test_archs():
    assert build_ck.parse_archs(None) == ["gfx942"]
    assert build_ck.parse_archs("gfx90a; gfx942,gfx950") == ["gfx90a", "gfx942", "gfx950"]
    assert build_ck.parse_archs("native") == ["native"]
    with pytest.raises(ValueError, match="gfx1100"):
        build_ck.parse_archs("gfx1100")
    assert build_ck.parse_hdims("128,64") == [64, 128]
    with pytest.raises(ValueError):
        build_ck.parse_hdims("80")


def test_missing_submodule_says_git_submodule_update(tmp_path):
    with pytest.raises(build_ck.CKNotFound, match="git submodule update --init"):
        build_ck.find_ck(tmp_path, environ={})
    with pytest.raises(build_ck.CKNotFound, match="CK_DIR"):
        build_ck.find_ck(tmp_path, environ={"CK_DIR": str(tmp_path)})


def test_submodule_gitlink_pinned():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-s", "composable_kernel"], cwd=ROOT, capture_output=True,
                         text=True).stdout
    assert out.startswith("160000 e31a7a4f29b371c32ea9daf9211b6ae1fed2fa40")
    assert "url = https://github.com/ROCm/composable_kernel.git" in (ROOT / ".gitmodules").read_text()


def test_codegen_shipped_set(tmp_path):
    ck = cc.ck_tree_here()
    if ck is None:
        pytest.skip("no CK tree (submodule, CK_DIR or .ckcache)")
    files = build_ck.generate(ck, tmp_path, ["gfx942"], hdims=[64])
    names = [f.name for f in files]
    assert "fmha_fwd_api.cpp" in names and "fmha_bwd_api.cpp" in names
    fwd = [n for n in names if n.startswith("fmha_fwd_d")]
    assert fwd and all("_lse_" in n and "_d64_" in n for n in fwd)
    assert any("_group_" in n for n in fwd) and any("_alibi_" in n for n in fwd) and any("_dropout_" in n for n in fwd)
    assert any(n.startswith("fmha_bwd_d64_") and "_deterministic_" in n for n in names)
    assert "fmha_fwd_splitkv_api.cpp" in names
    kv = [n for n in names if n.startswith("fmha_fwd_splitkv_d64_")]
    assert len(kv) == 24 and all("_group_" in n and "_qr_vr_pssk_" in n for n in kv)
    assert {("_npagedkv" in n, "_alibi_" in n, "_logits_" in n) for n in kv} == \
        {(dense, alibi, cap) for dense in (True, False) for alibi, cap in ((0, 0), (1, 0), (0, 1))}
    assert len([n for n in names if n.startswith("fmha_fwd_splitkv_combine_d64_")]) == 4
    assert "fmha_fwd_appendkv_api.cpp" in names
    ak = [n for n in names if n.startswith("fmha_fwd_appendkv_")]
    # 2 dtypes x dense/paged x (no rotary, interleaved, half) x (padding the key length only, padding all)
    assert len(ak) == 25 and all("_d64_" in n for n in ak if "_api" not in n)
    assert sum("_pagedkv" in n for n in ak) == 12
    assert sum("_inter" in n for n in ak) == sum("_half" in n for n in ak) == 8


def test_codegen_runs_give_appendkv_its_own_head_dims(tmp_path):
    """FA_CK_HDIMS buckets map to CK's appendkv tiles (d96 runs the d128 one, d192 has none), in a codegen run of
    their own; a subset without any still writes the appendkv api file, empty, which the glue links against."""
    runs = build_ck.codegen_runs(build_ck.APIS, None, [64, 96, 192])
    assert [(a, d) for a, _, d in runs] == [("fwd,bwd,fwd_splitkv", [64, 96, 192]), ("fwd_appendkv", [64, 128])]
    assert runs[1][1] == build_ck.APPENDKV_FILTER
    assert [(a, d) for a, _, d in build_ck.codegen_runs(build_ck.APIS, None, [192])][1] == ("fwd_appendkv", [0])
    assert build_ck.codegen_runs(build_ck.APIS, None, None) == [(build_ck.APIS, ",".join(build_ck.FILTERS[a] for a in
                                                                 build_ck.APIS.split(",")), None)]
    assert build_ck.codegen_runs(build_ck.APIS, None, list(build_ck.HDIMS))[0][2] is None
    ck = cc.ck_tree_here()
    if ck is None:
        pytest.skip("no CK tree (submodule, CK_DIR or .ckcache)")
    names = [f.name for f in build_ck.generate(ck, tmp_path, ["gfx942"], api="fwd_splitkv,fwd_appendkv", hdims=[96])]
    assert {build_ck.kernel_kind(Path(n).stem) for n in names if "_api" not in n} == \
        {("fwd_splitkv", 96), ("fwd_splitkv_combine", 96), ("fwd_appendkv", 128)}
    empty = build_ck.generate(ck, tmp_path / "d192", ["gfx942"], api="fwd_appendkv", hdims=[192])
    assert [f.name for f in empty] == ["fmha_fwd_appendkv_api.cpp"]
    assert "fmha_fwd_appendkv_<" not in empty[0].read_text()


# ---------------------------------------------------------------- the CK tree against its pin

def _fake_tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_ck_pin_catches_a_modified_or_missing_file(tmp_path):
    import ck_pin
    manifest = ck_pin.read_manifest()
    picked = ["example/ck_tile/01_fmha/fmha_bwd.hpp", "example/ck_tile/01_fmha/codegen/ops/fmha_bwd.py",
              "include/ck_tile/ops/fmha/kernel/fmha_bwd_kernel.hpp"]
    assert all(f in manifest for f in picked) and len(manifest) > 400
    ck = cc.ck_tree_here()
    if ck is not None:   # a temp copy of a few real files at the pin
        tree = _fake_tree(tmp_path / "ck", {f: (ck / f).read_bytes() for f in picked})
        entries = {f: manifest[f] for f in picked}
    else:                # no CK here: the same check on stand-in files
        tree = _fake_tree(tmp_path / "ck", {f: f.encode() for f in picked})
        entries = {f: ck_pin.sha256(tree / f) for f in picked}
    assert ck_pin.verify(tree, entries) == 3
    target = tree / picked[1]
    target.write_bytes(target.read_bytes().replace(b"bn0", b"bn1", 1) + b"\n")
    with pytest.raises(ck_pin.CKPinMismatch, match=r"CK_DIR.*1 file\(s\) differ, 0 missing.*changed: " + picked[1]):
        ck_pin.verify(tree, entries)
    (tree / picked[0]).unlink()
    with pytest.raises(ck_pin.CKPinMismatch, match="missing: " + picked[0]):
        ck_pin.verify(tree, entries)


def test_compile_check_refuses_an_unpinned_tree_before_compiling(tmp_path, capsys):
    tree = _fake_tree(tmp_path / "ck", {"include/ck_tile/core.hpp": b"// not CK", "example/ck_tile/01_fmha/x": b""})
    assert cc.main(["--ck", str(tree), "--clang", "no-such-clang", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"the CK tree {tree} (--ck) is not composable_kernel at the pinned commit" in err and "CK_DIR" in err
    assert not (tmp_path / "out").exists()


def test_ck_tree_in_use_matches_the_pin():
    import ck_pin
    ck = cc.ck_tree_here()
    if ck is None:
        pytest.skip("no CK tree (submodule, CK_DIR or .ckcache)")
    assert ck_pin.verify(ck) == len(ck_pin.used_files(ck))     # the manifest lists every file the build reads


# ---------------------------------------------------------------- the ck backend without its extension

class _T:  # just what unsupported() looks at
    def __init__(self, shape, dtype=torch.float16, cuda=True, grad=False):
        self.shape, self.dtype, self.is_cuda, self.requires_grad = shape, dtype, cuda, grad

    def stride(self):
        return (1,)


def test_ck_backend_imports_and_explains():
    sys.path.insert(0, str(ROOT / "python"))
    from fa_ck.backends import ck
    from fa_ck.params import AttnParams
    ok, why = ck.available()
    p = AttnParams(scale=0.1)
    q = _T((2, 16, 4, 64))
    if not getattr(torch.version, "hip", None):
        assert not ok and "ROCm" in why
        assert ck.unsupported(q, q, q, p) == why          # unavailable: that is the reason, always
    # what the shipped instances can serve, independent of whether they are built here
    gap = ck.capability_gap
    assert gap(q, q, q, p) is None
    assert gap(_T((2, 16, 4, 64), cuda=False), q, q, p) == "CPU tensors"
    assert "float32" in gap(_T((2, 16, 4, 64), torch.float32), q, q, p)
    big, odd = _T((2, 16, 4, 300)), _T((2, 16, 4, 111))
    assert gap(big, big, big, p).startswith("head_dim 300")
    assert "multiple of 8" in gap(odd, odd, odd, p)
    assert gap(q, q, big, p) == "v head dim differs from q's"
    assert gap(q, q, q, AttnParams(scale=0.1, softcap=30.0)) is None       # inference
    qg = _T((2, 16, 4, 64), grad=True)
    assert gap(qg, q, q, AttnParams(scale=0.1, softcap=30.0)) == "softcap backward"
    assert gap(q, q, q, AttnParams(scale=0.1, softcap=30.0, alibi_slopes=torch.ones(4))) \
        == "softcap with alibi"
    assert gap(q, q, q, AttnParams(scale=0.1, fp8=True)) == "fp8"


def test_ck_admits_head_dims_per_direction_from_the_built_extension(monkeypatch):
    ck, AttnParams = ck_backend()
    p = AttnParams(scale=0.1)
    d160, d160g = _T((2, 16, 4, 160)), _T((2, 16, 4, 160), grad=True)
    d64g, d200 = _T((2, 16, 4, 64), grad=True), _T((2, 16, 4, 200))
    # the full set: d129-192 backward runs CK's 256 bucket
    monkeypatch.setattr(ck, "_ck", None)
    assert ck.capability_gap(d160g, d160, d160, p) is None
    # FA_CK_HDIMS=64,128,192: the extension holds no backward above 128
    fake = type("FakeExt", (), {"hdims": [64, 128, 192], "fwd_hdims": [64, 128, 192], "bwd_hdims": [64, 128]})
    monkeypatch.setattr(ck, "_ck", fake)
    assert ck.capability_gap(d160, d160, d160, p) is None                      # inference: forward only
    assert ck.capability_gap(d160g, d160, d160, p) == "backward of head_dim 160 > 128 (built: [64, 128])"
    with torch.no_grad():
        assert ck.capability_gap(d160g, d160, d160, p) is None
    assert ck.capability_gap(d64g, d64g, d64g, p) is None
    assert ck.capability_gap(d200, d200, d200, p) == "head_dim 200 > 192 (built: [64, 128, 192])"
    fake.bwd_hdims = []                                                         # FA_CK_HDIMS=192
    assert "no bwd kernels built" in ck.capability_gap(d64g, d64g, d64g, p)


def test_ck_refuses_lse_under_autograd_and_probs_with_dropout():
    ck, AttnParams = ck_backend()
    q, qg = _T((2, 16, 4, 64)), _T((2, 16, 4, 64), grad=True)
    lse = AttnParams(scale=0.1, extra={"returns_lse": True})
    assert ck.capability_gap(q, q, q, lse) is None                              # no graph: lse is just an output
    assert "no gradient through lse" in ck.capability_gap(qg, q, q, lse)
    assert ck.capability_gap(qg, q, q, AttnParams(scale=0.1)) is None
    probs = {"returns_lse": True, "returns_attn_probs": True}
    assert ck.capability_gap(q, q, q, AttnParams(scale=0.1, dropout_p=0.1, extra=dict(probs))) \
        == "return_attn_probs with dropout (ck cannot replay its dropout mask)"
    assert ck.capability_gap(q, q, q, AttnParams(scale=0.1, dropout_p=0.1)) is None
    assert ck.capability_gap(q, q, q, AttnParams(scale=0.1, extra=dict(probs))) is None


def test_auto_sends_lse_training_to_triton_and_explains_why(monkeypatch):
    ck, AttnParams = ck_backend()
    from fa_ck import dispatch
    monkeypatch.setattr(ck, "available", lambda: (True, "faked"))
    monkeypatch.setattr(dispatch.module("triton"), "unsupported", lambda *a: None)
    qg = _T((2, 16, 4, 64), grad=True)
    name, lines = dispatch.choose(qg, qg, qg, AttnParams(scale=0.1, extra={"returns_lse": True}))
    assert name == "triton" and lines[0].startswith("ck: skipped, lse returned under autograd")
    assert dispatch.choose(qg, qg, qg, AttnParams(scale=0.1))[0] == "ck"


def test_interface_tells_dispatch_what_the_caller_gets_back(monkeypatch):
    ck_backend()
    import fa_ck
    from fa_ck import dispatch
    seen = []

    def stop(q, k, v, p, backend="auto"):
        seen.append(dict(p.extra))
        raise KeyboardInterrupt    # not an Exception: nothing on the way catches it

    monkeypatch.setattr(dispatch, "choose", stop)
    q = torch.randn(1, 2, 8, 16)
    calls = [lambda: fa_ck.attention(q, q, q, return_lse=True), lambda: fa_ck.attention(q, q, q),
             lambda: fa_ck.explain(q, q, q, return_lse=True),
             lambda: fa_ck.flash_attn_func(q, q, q, dropout_p=0.1, return_attn_probs=True)]
    for call in calls:
        try:
            call()
        except KeyboardInterrupt:
            pass
    assert seen[0]["returns_lse"] and not seen[1]["returns_lse"] and seen[2]["returns_lse"]
    assert seen[3] == {"returns_lse": True, "returns_attn_probs": True}


# ---------------------------------------------------------------- C++ glue (needs clang-22 and CK)

_MAP_RESULTS: dict = {}


def _run_map_test(ck, bwd, tmp_path):
    """test_map.cpp's output, built once per direction per test run."""
    if (ck, bwd) not in _MAP_RESULTS:
        _MAP_RESULTS[ck, bwd] = host_run(ck, "test_map.cpp", [f"-DFA_CK_TEST_BWD={bwd}"], tmp_path, f"m{bwd}")
    return _MAP_RESULTS[ck, bwd]


def test_arg_mapping_forward(tmp_path):
    r = _run_map_test(clang_or_skip(), 0, tmp_path)
    # no mask; strides of q are passed as given (a padded row stride of 600)
    assert (r["plain.mask"], r["plain.left"], r["plain.right"], r["plain.lse"]) == ("0", "-1", "-1", "1")
    assert (r["plain.stride_q"], r["plain.nhead_stride_q"], r["plain.batch_stride_q"]) == ("600", "64", "3000")
    assert (r["plain.nhead_stride_lse"], r["plain.batch_stride_lse"]) == ("5", "40")   # (B, Hq, Sq)
    assert (r["plain.stride_v"], r["plain.nhead_stride_v"]) == ("256", "128")
    # causal = bottom-right window (-1, 0)
    assert (r["causal.mask"], r["causal.mask_type"], r["causal.left"], r["causal.right"]) == ("2", "2", "-1", "0")
    # alibi + causal: a finite left keeps CK's exact distance bias (see fa_ck.hpp)
    assert (r["alibi_causal.bias"], r["alibi_causal.left"], r["alibi_causal.stride_bias"]) == ("2", "7", "8")
    # windows wide enough to hide nothing become no mask; one-sided stays bottom-right
    assert r["wide_window.mask"] == "0"
    assert (r["window.mask"], r["window.left"], r["window.right"]) == ("2", "2", "-1")
    assert (r["top_left.mask"], r["top_left.mask_type"]) == ("1", "1")
    assert (r["dropout.dropout"], r["dropout.seed_is_ptr"], r["dropout.softcap"]) == ("1", "1", "1")
    # varlen = CK group mode: (Hq, total_q) lse, no batch strides, seqstarts set
    assert (r["varlen.group"], r["varlen.batch_stride_q"], r["varlen.nhead_stride_lse"]) == ("1", "0", "12")
    assert r["varlen.seqstart_q"] != "0" and r["overflow.raised"] == "1"


def test_arg_mapping_backward(tmp_path):
    r = _run_map_test(clang_or_skip(), 1, tmp_path)
    assert (r["bwd.mask"], r["bwd.deterministic"], r["bwd.dbias"]) == ("2", "1", "0")
    # deterministic dq_acc: one slice per key tile of the kernel (128 keys to d128, 64 above)
    assert (r["bwd.splits"], r["bwd.splits_nondet"]) == ("1", "1")     # ceil(40 / 128)
    assert (r["bwd.splits_4k_d128"], r["bwd.splits_4k_d256"]) == ("32", "64")
    # dq_acc (splits, B, Sq, Hq, D) contiguous float32
    assert (r["bwd.stride_dq_acc"], r["bwd.nhead_stride_dq_acc"], r["bwd.batch_stride_dq_acc"],
            r["bwd.split_stride_dq_acc"]) == ("512", "64", "2560", "5120")
    assert (r["bwd.stride_dk"], r["bwd.nhead_stride_lsed"], r["bwd.batch_stride_lsed"]) == ("512", "5", "40")


_CODEGEN_TILES = """
import json, sys
sys.path.insert(0, sys.argv[1])
from codegen.ops import fmha_bwd
out = {}
for arch in sys.argv[2].split(","):
    for optdim in ([-1], [64, 128, 192]):
        pool = fmha_bwd.get_bwd_blobs([arch], "", 2, "simplified", optdim)[0]
        tiles = {}
        for by_dtype in pool.dq_dk_dv_pool.values():
            for by_hdim in by_dtype.values():
                for hdim, traits in by_hdim.items():
                    # tiles that split dq by key tile: deterministic, not the single-tile max_seq_q kind
                    det = [t.tile.F_bn0 for t in traits if t.deterministic == "t" and t.tile.max_seq_q == 0]
                    tiles[hdim] = min(det + [tiles.get(hdim, 1 << 30)])
        out[f"{arch} {optdim[0] if optdim == [-1] else 'opt'}"] = tiles
print(json.dumps(out))
"""


def _codegen_bwd_tiles(ck):
    """{"<arch> all|opt": {bucket: smallest deterministic key tile}} from CK's own backward codegen (receipt 2),
    for the full set and for FA_CK_HDIMS=64,128,192."""
    import json
    r = subprocess.run([sys.executable, "-c", _CODEGEN_TILES, str(build_ck.fmha_example_dir(ck)),
                        ",".join(build_ck.SUPPORTED_ARCHS)], capture_output=True, text=True, timeout=120, check=True)
    return {k.replace("-1", "all"): {int(h): t for h, t in v.items()} for k, v in json.loads(r.stdout).items()}


def test_shipped_backward_buckets_match_codegen():
    ck_tree = cc.ck_tree_here()
    if ck_tree is None:
        pytest.skip("no CK tree (submodule, CK_DIR or .ckcache)")
    ck, _ = ck_backend()
    tiles = _codegen_bwd_tiles(ck_tree)
    for arch in build_ck.SUPPORTED_ARCHS:
        assert sorted(tiles[f"{arch} all"]) == list(ck._SHIPPED["bwd"]), arch
        assert sorted(tiles[f"{arch} opt"]) == [64, 128], arch       # FA_CK_HDIMS=64,128,192: no 192 backward
    assert list(ck._SHIPPED["fwd"]) == list(build_ck.HDIMS)


def test_bwd_key_tile_and_buckets_match_codegen(tmp_path):
    ck_tree = clang_or_skip()
    r = _run_map_test(ck_tree, 1, tmp_path)
    tiles = _codegen_bwd_tiles(ck_tree)
    for d in range(8, 257, 8):
        for arch in build_ck.SUPPORTED_ARCHS:
            full = tiles[f"{arch} all"]
            bucket = min(b for b in full if b >= d)
            # dq_acc holds ceil(Sk / tile) slices: the tile must not exceed any kernel's, and is the smallest
            assert int(r[f"d{d}.key_tile"]) == full[bucket], (d, arch)
            assert r[f"d{d}.bwd_bucket"] == str(int(d in full)), (d, arch)


def test_mask_and_alibi_args_agree_with_ck_own_classes(tmp_path):
    """mask_args() through CK's host-callable mask and ALiBi classes (as its fwd and bwd kernels build them)
    for every sq, sk in 1..9, window sides -1..9, with and without ALiBi, against the reference semantics;
    also with max_seqlen_k an upper bound of sk (the KV-cache glue passes the cache capacity)."""
    r = host_run(clang_or_skip(), "test_masks.cpp", [], tmp_path, "masks")
    fails = {k: v for k, v in r.items() if "fail." in k}
    assert (int(r["cases"]), int(r["entries"])) == (9 * 9 * 11 * 11 * 2 * 2, 2 * 490050)
    assert (r["mask_mismatches"], r["bias_mismatches"]) == ("0", "0"), fails
    assert 0 < int(r["no_mask_cases"]) < int(r["cases"])      # windows that hide nothing run CK's no-mask kernels


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def test_generated_dispatchers_serve_every_admitted_call_reading_the_device_once(direction, tmp_path):
    """CK's dispatcher for the shipped set, behind our glue, with stub kernels: every head dim (multiples
    of 8 to 256) x dtype x batch/varlen x no mask/causal/window x alibi x dropout x softcap (forward, not
    with alibi) or deterministic (backward) reaches an instance of its bucket and features; the device's
    properties are read once per device."""
    ck = clang_or_skip()
    build_ck.generate(ck, tmp_path / "gen", ["gfx942"], api=direction)
    api = tmp_path / "gen" / f"fmha_{direction}_api.cpp"
    bwd = int(direction == "bwd")
    r = host_run(ck, "test_dispatch.cpp", [f"-DFA_CK_TEST_BWD={bwd}", f'-DFA_CK_API_FILE="{api}"'], tmp_path,
                  f"dispatch_{direction}", opt="-O0")
    fails = {k: v for k, v in r.items() if k.startswith("fail.")}
    n = 32 * 2 * 2 * 3 * (2 * 2 * 2 if bwd else 2 * 2 * 2 - 2)
    assert (int(r["combos"]), int(r["found"]), int(r["wrong"])) == (n, n, 0), fails
    assert int(r["props_calls_one_device"]) == 1
    # a second gfx9 device is read once more; a gfx1100 has no instance (and is read once)
    assert (r["device1_found"], r["device2_found"], r["device0_found"]) == ("1", "0", "1")
    assert int(r["props_calls_three_devices"]) == 3


def test_binding_compiles_against_torch_headers():
    if CLANG is None:
        pytest.skip("clang++-22 not installed")
    import sysconfig
    from torch.utils.cpp_extension import include_paths
    inc = [f"-I{p}" for p in include_paths() + [sysconfig.get_paths()["include"]]]
    r = subprocess.run([CLANG, "-fsyntax-only", "-std=c++20", "-DFA_CK_SYNTAX_ONLY", "-DTORCH_EXTENSION_NAME=_ck",
                        f"-I{ROOT / 'csrc'}", *inc, str(ROOT / "csrc" / "binding.cpp")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


def test_amdgcn_parser():
    asm = textwrap.dedent("""
        k0:
        \tv_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
        \tv_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
        \ts_swappc_b64 s[30:31], s[4:5]
        .Lfunc_end0:
        ; Occupancy: 2
        amdhsa.kernels:
          - .agpr_count:     16
            .group_segment_fixed_size: 27648
            .name:           k0
            .private_segment_fixed_size: 64
            .sgpr_count:     40
            .sgpr_spill_count: 0
            .vgpr_count:     256
            .vgpr_spill_count: 12
        """)
    (k,) = cc.parse_amdgcn(asm)
    assert (k["mfma"], k["calls"], k["occupancy"], k["lds"], k["vgpr"], k["agpr"], k["vgpr_spill"]) == \
        (2, 1, 2, 27648, 256, 16, 12)
