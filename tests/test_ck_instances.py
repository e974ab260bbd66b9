"""The CK instance set fa_ck ships (build_ck's filters) against what its dispatch can reach, and the compile
check's spill gate and build-time arithmetic. CPU only; the codegen tests need a CK tree (no compiler)."""
from __future__ import annotations

import itertools
import re
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import build_ck  # noqa: E402
import ck_compile_check as cc  # noqa: E402



@pytest.fixture(scope="module")
def ck():
    tree = cc.ck_tree_here()
    if tree is None:
        pytest.skip("no CK tree (submodule, CK_DIR or .ckcache)")
    return tree


@pytest.fixture(scope="module")
def shipped(ck):
    return build_ck.list_instances(ck, ["gfx942"])


@pytest.fixture(scope="module")
def receipt2(ck):
    return build_ck.list_instances(ck, ["gfx942"], exclude=())


def _totals(names):
    """(forward, backward, KV-cache) kernel counts."""
    return tuple(build_ck.group_totals(build_ck.count_instances(names)).values())


def test_shipped_count_is_recorded(shipped):
    assert _totals(shipped) == tuple(build_ck.SHIPPED_COUNTS.values()) == (480, 820, 236)
    counts = build_ck.count_instances(shipped)
    for h in (32, 64, 96, 128, 256):
        assert (counts[("bwd_dq_dk_dv", h)], counts[("bwd_dot_do_o", h)], counts[("bwd_convert_dq", h)]) == \
            (128, 12, 24), h
        # 2 dtypes x dense/paged x mask/no mask x (plain, alibi, softcap); combine: 2 dtypes x lse/no lse
        assert (counts[("fwd_splitkv", h)], counts[("fwd_splitkv_combine", h)]) == (24, 4), h
    assert [counts[("fwd", h)] for h in build_ck.HDIMS] == [72, 72, 72, 72, 72, 120]
    assert ("fwd_splitkv", 192) not in counts                 # CK has no d192 split-KV tile
    # appendkv: 2 dtypes x dense/paged x (no rotary, interleaved, half) x (key-length padding only, all padding)
    assert {h: n for (kind, h), n in counts.items() if kind == "fwd_appendkv"} == {32: 24, 64: 24, 128: 24, 256: 24}


def test_only_unreachable_instances_are_left_out(shipped, receipt2):
    """Receipt 2 (the split-KV part through its filter) less the shipped set is exactly the unreachable groups,
    and each left-out kernel has a shipped twin with the same features that dispatch takes instead."""
    assert _totals(receipt2) == (504, 1140, 376)
    dropped = sorted(set(receipt2) - set(shipped))
    assert set(shipped) <= set(receipt2)
    fwd = [n for n in dropped if build_ck.kernel_kind(n)[0] == "fwd"]
    bwd = [n for n in dropped if n.startswith("fmha_bwd_")]
    assert len(fwd) == 24 and all("_d192_" in n and "_b128x128x32x128x32x192_" in n for n in fwd)
    assert len(bwd) == 320 and all(re.match(r"fmha_bwd_d\d+_", n) and "_pd1dv1_" in n for n in bwd)
    kept = set(shipped)
    for n in bwd:
        assert n.replace("_pd1dv1_", "_pd8dv8_") in kept, n
    for n in fwd:     # the d192 x d192 kernel of the same mode, padding and features
        twin = n.replace("_b128x128x32x128x32x192_", "_b128x128x32x192x32x192_").replace("_qr_async", "_o1_qr_async")
        assert twin in kept, n
    # split-KV: head-dim-padded kernels of 32, 64, 128, 256 and the unpadded d96 ones, with their combine kernels
    kv = [n for n in dropped if n.startswith("fmha_fwd_splitkv_d")]
    comb = [n for n in dropped if n.startswith("fmha_fwd_splitkv_combine_")]
    # appendkv: everything receipt 2 generates is shipped
    assert len(kv) == 120 and len(comb) == 20 and len(kv) + len(comb) + len(fwd) + len(bwd) == len(dropped)
    for n in kv:
        d96 = n.startswith("fmha_fwd_splitkv_d96_")
        assert ("_qr_vr_pssk_" if d96 else "_qr_vr_psskddv_") in n, n
        twin = n.replace("_pssk_", "_psskddv_") if d96 else n.replace("_psskddv_", "_pssk_")
        assert twin in kept, n


def test_every_admitted_feature_combination_has_an_instance(shipped):
    """By name: every dtype x mode x head dim x mask x bias/softcap x dropout (forward), every dtype x mode x
    head dim x bias x mask x dropout x deterministic, head dim exact or padded to 8 (backward), every KV-cache
    dtype x bucket x dense/paged x mask x bias/softcap that capability_gap and kvcache_gap admit, and every append
    (dtype x appendkv tile x dense/paged x rotary mode) has a shipped kernel. tests/test_ck_build.py checks the
    same through CK's dispatchers, compiled."""
    names = set(shipped)
    fwd_feats = [("nlogits", "nbias"), ("nlogits", "alibi"), ("logits", "nbias")]   # CK: no softcap with ALiBi
    for dt, mode, h, mask, (logits, bias), drop in itertools.product(
            ("fp16", "bf16"), ("batch", "group"), build_ck.HDIMS, ("mask", "nmask"), fwd_feats,
            ("dropout", "ndropout")):
        pat = re.compile(rf"fmha_fwd_d{h}_{dt}_{mode}_.*_{logits}_{bias}_{mask}_lse_{drop}_")
        assert any(pat.match(n) for n in names), (dt, mode, h, mask, logits, bias, drop)
    # KV-cache: every dtype x bucket x dense/paged x mask x (plain, alibi, softcap) in group mode, d96 padded
    for dt, h, paged, mask, (logits, bias) in itertools.product(
            ("fp16", "bf16"), (32, 64, 96, 128, 256), ("npagedkv", "pagedkv"), ("mask", "nmask"), fwd_feats):
        pad = "psskddv" if h == 96 else "pssk"
        pat = re.compile(rf"fmha_fwd_splitkv_d{h}_{dt}_group_.*_qr_vr_{pad}_{logits}_{bias}_{mask}_lse_.*_{paged}_")
        assert any(pat.match(n) for n in names), (dt, h, paged, mask, logits, bias)
    # KV-cache append: every dtype x appendkv tile x dense/paged x rotary mode has the kernel padding everything
    for dt, h, rope, paged in itertools.product(("fp16", "bf16"), (32, 64, 128, 256), ("", "_inter", "_half"),
                                                ("", "_pagedkv")):
        assert f"fmha_fwd_appendkv_d{h}_{dt}_b64x64x{h}x{h}_vr_psskddv{rope}{paged}_gfx9" in names, (dt, h, rope, paged)
    for dt, mode, h, pad, bias, mask, drop, det in itertools.product(
            ("fp16", "bf16"), ("batch", "group"), (32, 64, 96, 128, 256), ("npad", "pd8dv8"), ("nbias", "alibi"),
            ("mask", "nmask"), ("dropout", "ndropout"), ("deterministic", "ndeterministic")):
        pat = re.compile(rf"fmha_bwd_d{h}_{dt}_{mode}_.*_{pad}_{bias}_ndbias_{mask}_{drop}_(wg16_)?{det}_")
        assert any(pat.match(n) for n in names), (dt, mode, h, pad, bias, mask, drop, det)


def test_hdims_subset_counts(ck):
    # KV-cache: 28 split-KV + combine kernels per bucket, 24 appendkv kernels per appendkv tile (d96: the d128 one)
    assert _totals(build_ck.list_instances(ck, ["gfx942"], hdims=[64, 128])) == (144, 328, 104)
    assert _totals(build_ck.list_instances(ck, ["gfx942"], hdims=[64, 128, 256])) == (264, 492, 156)
    assert _totals(build_ck.list_instances(ck, ["gfx942"], hdims=[192])) == (72, 0, 0)
    assert _totals(build_ck.list_instances(ck, ["gfx942"], hdims=[96, 128])) == (144, 328, 80)


def test_generate_writes_what_list_instances_lists(ck, tmp_path):
    files = build_ck.generate(ck, tmp_path, ["gfx942"], hdims=[192])
    written = sorted(f.stem for f in files if "_api" not in f.name)
    assert written == build_ck.list_instances(ck, ["gfx942"], hdims=[192])
    assert not any("_b128x128x32x128x32x192_" in n for n in written)
    api = (tmp_path / "fmha_fwd_api.cpp").read_text()
    assert "t.hdim_v <= 128" not in api and "t.hdim_q <= 192 && t.hdim_v <= 192" in api   # no d192 x dv128 branch


def test_ck_example_flags_are_ck_cmake_private_options(ck):
    """build_ck.CK_EXAMPLE_FLAGS are the options CK's FMHA example CMakeLists gives its instance libraries by
    default (FMHA_FWD_FAST_EXP2 on, CK_USE_OCP_FP8 off)."""
    text = (build_ck.fmha_example_dir(ck) / "CMakeLists.txt").read_text()
    for direction in ("fwd", "bwd"):
        opts = set()
        for m in re.finditer(rf"list\(APPEND FMHA_{direction.upper()}_PRIVATE_COMPILE_OPTIONS ([^)]*)\)", text):
            opts.update(m[1].split())
        opts -= {"-DCK_TILE_FMHA_FWD_FAST_EXP2=0", "-DCK_TILE_USE_OCP_FP8"}
        assert opts == set(build_ck.CK_EXAMPLE_FLAGS[direction]), direction
    top = (ck / "CMakeLists.txt").read_text()
    assert 'set(CK_CXX_STANDARD "20"' in top
    flags = build_ck.ck_example_flags("fwd")
    assert flags[:3] == ["-std=c++20", "-O3", "-DNDEBUG"]          # CMake's Release: -O3 -DNDEBUG
    for gated in ("-fno-offload-uniform-block", "--lsr-drop-solution=1", "-enable-post-misched=0"):
        assert gated in flags and gated in " ".join(cc.our_flags())


# ---------------------------------------------------------------- the spill gate, with a fake compiler

def _asm(name: str, vspill: int, scratch: int = 0) -> str:
    return textwrap.dedent(f"""
        {name}:
        \tv_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
        .Lfunc_end0:
        ; Occupancy: 2
        amdhsa.kernels:
          - .agpr_count:     0
            .group_segment_fixed_size: 27648
            .name:           {name}
            .private_segment_fixed_size: {scratch}
            .sgpr_count:     40
            .sgpr_spill_count: 0
            .vgpr_count:     256
            .vgpr_spill_count: {vspill}
        """)


@pytest.mark.parametrize("ck_spill,fails", [(55, False), (0, True)])
def test_spill_gate(ck_spill, fails, tmp_path, monkeypatch):
    src = tmp_path / "fmha_fwd_d128_fp16_batch_x.cpp"
    calls = []

    def fake_compile(clang, ck, arch, s, out_dir, flags=None):
        calls.append(flags)
        out = Path(out_dir) / "k.s"
        out.write_text(_asm("k", ck_spill, 4 * ck_spill))
        return {"src": s, "seconds": 1.0, "cpu": 0.9, "ok": True, "asm": out}

    monkeypatch.setattr(cc, "compile_one", fake_compile)
    rows = [dict(label="fwd", kernel="fmha_fwd_d128_fp16_batch_x", seconds=70.0, src=src,
                 **cc.parse_amdgcn(_asm("k", 55, 224))[0]),
            dict(label="fwd", kernel="fmha_fwd_d64_fp16_batch_x", seconds=50.0, src=tmp_path / "other.cpp",
                 **cc.parse_amdgcn(_asm("k", 0))[0])]
    failures = []
    notes = cc.spill_gate("clang", None, "gfx942", rows, tmp_path / "out", 1, failures)
    assert calls == [build_ck.ck_example_flags("fwd")]          # only the spilling kernel, with CK's flags
    assert bool(failures) == fails
    assert rows[0]["ck_flags_spill"] == f"{ck_spill}/0" and rows[1]["ck_flags_spill"] == "-"
    if not fails:
        assert len(notes) == 1 and "the compiler's" in notes[0]
    else:
        assert "fa_ck's flags cause it" in failures[0]


def test_build_time_arithmetic(monkeypatch):
    rows = [dict(kernel="fmha_fwd_d64_fp16_x", seconds=60.0), dict(kernel="fmha_fwd_d128_fp16_x", seconds=80.0),
            dict(kernel="fmha_fwd_d128_bf16_x", seconds=100.0), dict(kernel="fmha_bwd_d128_fp16_x", seconds=200.0),
            dict(kernel="fmha_bwd_dot_do_o_d128_x", seconds=20.0), dict(kernel="fmha_bwd_convert_dq_d128_x",
                                                                          seconds=10.0)]
    measured = cc.per_kind_seconds(rows)
    assert measured[("fwd", 128)] == 90.0
    assert cc.seconds_for(measured, "fwd", 96) == (90.0, "d128's")       # a tie goes to the larger head dim
    assert cc.seconds_for(measured, "fwd", 32) == (60.0, "d64's")
    assert cc.seconds_for(measured, "bwd_dq_dk_dv", 256) == (200.0, "d128's")
    rows += [dict(kernel="fmha_fwd_splitkv_d128_fp16_x", seconds=30.0),
             dict(kernel="fmha_fwd_splitkv_combine_d128_fp16_x", seconds=15.0)]
    counts = {("fwd", 64): 10, ("fwd", 128): 10, ("bwd_dq_dk_dv", 128): 64, ("bwd_dot_do_o", 128): 6,
              ("bwd_convert_dq", 128): 12, ("fwd_splitkv", 64): 8, ("fwd_splitkv_combine", 64): 2}
    monkeypatch.setattr(cc, "HDIM_CHOICES", (None,))
    table = cc.build_time_table(None, "gfx942", rows, counts)
    core_s = 10 * 60 + 10 * 90 + 64 * 200 + 6 * 20 + 12 * 10 + 8 * 30 + 2 * 15
    row = table.splitlines()[2].split(" | ")
    assert row[1:5] == ["20", "82", "10", f"{core_s / 3600:.1f}"]
    assert row[5] == f"{max(core_s / 64, 200) / 60:.0f}"
    assert "d64 split-KV (d128's)" in row[6] and "d64 combine (d128's)" in row[6]


def _row(label: str, kernel: str, cpu: int) -> str:
    """A results-table row as format_table writes it."""
    return f"| {label} | {kernel} | 256 | 0 | 58 | 0 | 0 | 0 | 27648 | 2 | 128 | 0 | {cpu + 1} | {cpu} | - |"


def test_match_run_replaces_only_its_rows(tmp_path):
    """--match with --results: the rows and spill notes of the other subset entries come from the results file,
    the build-time arithmetic gets their seconds, and the merged table keeps SUBSET's order."""
    old = tmp_path / "r.md"
    line = _row
    fwd, kv = cc.SUBSET[0][0], cc.SUBSET[-3][0]
    old.write_text("# CK FMHA compile check, gfx942\n\n- date: 2026-12-07\n\n| instance | kernel |\n|---|---|\n"
                   + line(fwd, "fmha_fwd_d128_fp16_batch_x", 25) + "\n" + line(kv, "fmha_fwd_splitkv_d64_fp16_x", 16)
                   + "\n\nSpill gate (...):\n\n- fmha_fwd_d128_fp16_batch_x: spills 55\n- gone: spills 1\n\n"
                   "Instances ...\n")
    prior = cc.prior_results(old, "kvcache append*")
    assert prior["date"] == "2026-12-07" and [r["kernel"] for r in prior["rows"]] == \
        ["fmha_fwd_d128_fp16_batch_x", "fmha_fwd_splitkv_d64_fp16_x"]
    assert (prior["rows"][0]["cpu"], prior["rows"][0]["seconds"]) == (25.0, 26.0)
    assert prior["notes"] == ["fmha_fwd_d128_fp16_batch_x: spills 55"]
    append = cc.SUBSET[-1][0]
    assert append.startswith("kvcache append") and cc.prior_results(old, "fwd*")["rows"][0]["label"] == kv
    new_table = "| instance | kernel |\n|---|---|\n" + line(append, "fmha_fwd_appendkv_d64_fp16_x", 5)
    table, notes = cc.merge_results(new_table, ["no kernel spills with fa_ck's flags"], prior)
    assert [r.split("|")[2].strip() for r in table.splitlines()[2:]] == \
        ["fmha_fwd_d128_fp16_batch_x", "fmha_fwd_splitkv_d64_fp16_x", "fmha_fwd_appendkv_d64_fp16_x"]
    assert notes == ["fmha_fwd_d128_fp16_batch_x: spills 55"]
    assert cc.prior_results(tmp_path / "none.md", "x") is None
