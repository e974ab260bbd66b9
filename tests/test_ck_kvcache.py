"""CPU tests of the ck backend's KV-cache path: CK's split-KV and appendkv dispatchers for the shipped set behind
fa_ck's glue (compiled for the host with clang 22 and stub kernels, when clang-22 and a CK tree are present), and
the Python side's kvcache_gap / append_gap / kvcache_append against them, without the extension."""
from __future__ import annotations

import pytest
import torch

from ck_host import ck_backend, clang_or_skip, host_run

import build_ck  # importable once ck_host has put the checkout's root on sys.path


_DISPATCH_RESULTS: dict = {}


def _run_dispatch(ck, tmp_path, api: str) -> dict:
    """test_dispatch.cpp built against the shipped dispatcher of CK's `api` ("fwd_splitkv" or "fwd_appendkv"),
    run once per test run."""
    if (ck, api) not in _DISPATCH_RESULTS:
        build_ck.generate(ck, tmp_path / f"gen_{api}", ["gfx942"], api=api)
        source = tmp_path / f"gen_{api}" / f"fmha_{api}_api.cpp"
        test = {"fwd_splitkv": "-DFA_CK_TEST_KVCACHE=1", "fwd_appendkv": "-DFA_CK_TEST_APPENDKV=1"}[api]
        _DISPATCH_RESULTS[ck, api] = host_run(ck, "test_dispatch.cpp", ["-DFA_CK_TEST_BWD=0", test,
                                                                         f'-DFA_CK_API_FILE="{source}"'],
                                              tmp_path, f"dispatch_{api}", opt="-O0")
    return _DISPATCH_RESULTS[ck, api]


def test_splitkv_dispatcher_serves_every_admitted_kvcache_call(tmp_path):
    """CK's split-KV dispatcher for the shipped set, behind kvcache_fwd, with stub kernels: every head dim
    (multiples of 8 to 256) x dtype x dense/paged x no mask/causal/window x plain/ALiBi/softcap x splits 1, 3 or
    chosen x Sq 1 or 5 is served exactly where kvcache_bucket() says, by a group-mode split-KV kernel of its
    bucket and features, then its combine kernel, with the strides, page size and stride, seqlen and seqstart
    pointers and workspace strides the glue means; the device's properties are read once."""
    r = _run_dispatch(clang_or_skip(), tmp_path, "fwd_splitkv")
    fails = {k: v for k, v in r.items() if k.startswith("fail.")}
    n = 32 * 2 * 2 * 3 * 3 * 3 * 2
    assert (int(r["combos"]), int(r["served"]), int(r["wrong"])) == (n, 8 * n // 32, 0), fails
    assert r["props_calls_one_device"] == "1" and r["props_calls_end"] == "1"
    # num_splits=0 on a 304-CU device: fill 608 block slots to 85% (GQA decoding folds 4 q heads into a tile)
    assert (r["splits.b1_gqa_128k"], r["splits.b64_gqa_8k"], r["splits.b1_cache256"],
            r["splits.b1_mha_causal_sq16"]) == ("65", "1", "2", "17")
    assert (r["page64_found"], r["page128_found"], r["splits129_found"]) == ("0", "1", "0")


def test_appendkv_dispatcher_serves_every_append_the_glue_admits(tmp_path):
    """CK's appendkv dispatcher for the shipped set, behind kvcache_append, with a stub kernel: every head dim
    (multiples of 8 to 256) x dtype x no rotary/interleaved/half x dense/cache_batch_idx/paged x Sq 1, 64 x 1 or 70
    new tokens x q per position is served by the instance of its tile, rotary mode, layout and padding, with the
    strides, seqlen pointer, block table, page size, rotary tables, rotary_dim, has_mask (q per position) and
    new-token count the glue means; rotary dims that are not a multiple of 16, pages not a multiple of 128 and head
    dims past 256 never reach CK; nothing to write launches nothing; the device's properties are read once."""
    r = _run_dispatch(clang_or_skip(), tmp_path, "fwd_appendkv")
    fails = {k: v for k, v in r.items() if k.startswith("fail.")}
    n = 32 * 2 * 3 * 3 * 2 * 2 * 2
    refused = 2 * 2 * 3 * 2 * 2 * 2            # d8 with rotary: no rotary_dim <= 8 is a multiple of 16
    assert (int(r["combos"]), int(r["served"]), int(r["wrong"])) == (n, n - refused, 0), fails
    assert r["hdim8"] == "48/144" and all(r[f"hdim{d}"] == "144/144" for d in range(16, 257, 8))
    assert r["rotary_served_d128"] == ",".join(map(str, range(16, 129, 16))) + ","
    assert r["rotary_served_d80"] == "16,32,48,64,80,"
    assert r["pages_served"] == "128,256,512,"
    # 0 refused, 1 done without launching, 2 through CK
    assert (r["d264"], r["batch0"], r["nothing_new"], r["rotary_only"], r["rotary_nothing"]) == \
        ("0", "1", "1", "2", "1")
    assert r["props_calls_one_device"] == "1" and r["props_calls_end"] == "1"


class _Cache:  # what kvcache_gap looks at: shape, dtype, device, strides (contiguous unless given)
    def __init__(self, shape, dtype=torch.float16, cuda=True, strides=None):
        self.shape, self.dtype, self.is_cuda = tuple(shape), dtype, cuda
        if strides is None:
            strides = [1]
            for n in reversed(self.shape[1:]):
                strides.insert(0, strides[0] * n)
        self._strides = tuple(strides)

    def stride(self, i=None):
        return self._strides if i is None else self._strides[i]


def _kv(**kw):
    ck_backend()                                        # puts python/ on the path
    from fa_ck.params import KVCacheParams
    return KVCacheParams(scale=0.1, seqlens_k=torch.zeros(2, dtype=torch.int32), **kw)


def test_kvcache_gap_refuses_exactly_what_the_splitkv_dispatcher_cannot_serve(tmp_path, monkeypatch):
    """Per head dim, ck.kvcache_gap admits a call exactly where the compiled dispatcher served all of them
    (tests above), and refuses it where it served none."""
    r = _run_dispatch(clang_or_skip(), tmp_path, "fwd_splitkv")
    ck, _ = ck_backend()
    monkeypatch.setattr(ck, "_ck", None)                 # the shipped set, whatever is built here
    for d in range(8, 257, 8):
        served, total = map(int, r[f"hdim{d}"].split("/"))
        assert served in (0, total), d
        q, cache = _Cache((2, 1, 8, d)), _Cache((2, 1000, 2, d))
        assert (ck.kvcache_gap(q, cache, cache, _kv()) is None) == (served == total), d


def test_kvcache_gap_names_what_ck_cannot_serve(monkeypatch):
    ck, _ = ck_backend()
    monkeypatch.setattr(ck, "_ck", None)
    q, dense = _Cache((2, 1, 8, 128)), _Cache((4, 1000, 2, 128))
    pages = lambda n: _Cache((64, n, 2, 128))  # noqa: E731
    table = torch.zeros(2, 8, dtype=torch.int32)
    gap = ck.kvcache_gap
    assert gap(q, dense, dense, _kv()) is None
    assert gap(q, dense, dense, _kv(leftpad=torch.zeros(2, dtype=torch.int32), causal=True, window_right=0)) is None
    assert gap(q, dense, dense, _kv(alibi_slopes=torch.ones(8), window_left=16)) is None
    for n in (128, 256, 512):
        assert gap(q, pages(n), pages(n), _kv(block_table=table)) is None
    for n in (16, 32, 64, 192):      # vLLM's 16 among them
        assert gap(q, pages(n), pages(n), _kv(block_table=table)) == \
            f"page size {n} (CK's paged split-KV needs a multiple of 128)"
    assert gap(q, pages(256), pages(256), _kv(block_table=table, leftpad=torch.zeros(2, dtype=torch.int32))) \
        .startswith("cache_leftpad with a paged cache")
    strided = torch.zeros(8, 2, dtype=torch.int32).t()         # (B, max_blocks) seen through a transpose
    assert gap(q, pages(256), pages(256), _kv(block_table=strided)) == \
        "a block_table whose last dim is not contiguous (CK reads each row's entries in a row)"
    assert gap(q, dense, dense, _kv(softcap=30.0, alibi_slopes=torch.ones(8))) == "softcap with alibi"
    assert gap(q, dense, dense, _kv(softcap=30.0)) is None
    assert gap(q, dense, dense, _kv(num_splits=128)) is None
    assert gap(q, dense, dense, _kv(num_splits=129)) == "num_splits 129 > 128 (CK's combine kernel)"
    assert gap(_Cache((2, 1, 8, 128), cuda=False), dense, dense, _kv()) == "CPU tensors"
    f32 = _Cache((2, 1, 8, 128), torch.float32)
    assert "float32" in gap(f32, dense, dense, _kv())
    assert gap(q, _Cache((4, 1000, 2, 128), torch.bfloat16), dense, _kv()) == "cache dtype differs from q's"
    assert gap(q, dense, _Cache((4, 1000, 2, 64)), _kv()) == "cache head dim differs from q's"
    d80, d160 = _Cache((2, 1, 8, 80)), _Cache((2, 1, 8, 160))
    assert gap(d80, _Cache((4, 1000, 2, 80)), _Cache((4, 1000, 2, 80)), _kv()) is None      # d96 kernel, padded
    assert gap(d160, _Cache((4, 1000, 2, 160)), _Cache((4, 1000, 2, 160)), _kv()) == \
        "head_dim 160: CK's split-KV kernels serve head dims 32, 64, 65-96, 128, 256 (FA_CK_HDIMS)"
    # (S, B, H, D) storage seen as (B, S, H, D): no whole number of rows between cache rows
    odd = _Cache((4, 1000, 2, 128), strides=(256, 4 * 256, 128, 1))
    assert gap(q, odd, odd, _kv()).startswith("a dense cache whose batch stride is not a whole number of rows")
    one = _Cache((1, 1000, 2, 128), strides=(7, 256, 128, 1))
    assert gap(q, one, one, _kv()) is None                                                      # one cache row
    assert gap(q, _Cache((4, 1000, 2, 128), strides=(2 * 256 * 1000, 256, 128, 2)), dense, _kv()) == \
        "caches whose last dim is not contiguous"
    fake = type("FakeExt", (), {"hdims": [64, 192], "fwd_hdims": [64, 192], "bwd_hdims": [64], "kvcache_hdims": [64]})
    monkeypatch.setattr(ck, "_ck", fake)                 # FA_CK_HDIMS=64,192: no split-KV beyond d64
    assert gap(q, dense, dense, _kv()).startswith("head_dim 128: CK's split-KV kernels serve head dims 64 ")


def test_kvcache_unavailable_says_why():
    ck, _ = ck_backend()
    ok, why = ck.available()
    if not ok:
        q = _Cache((2, 1, 8, 128))
        assert ck.kvcache_unsupported(q, q, q, _kv()) == why


class _New(_Cache):   # new keys or a rotary table: also whether it is contiguous
    def __init__(self, shape, dtype=torch.float16, contiguous=True, **kw):
        super().__init__(shape, dtype, **kw)
        self._contiguous = contiguous

    def is_contiguous(self):
        return self._contiguous


def _append_gap(ck, d=128, page=0, rd=0, dtype=torch.float16, table_dtype=None, contiguous=True, **kw):
    q = _Cache((2, 1, 8, d), dtype)
    cache = _Cache((64, page, 2, d) if page else (4, 1000, 2, d), dtype)
    new = _Cache((2, 1, 2, d), dtype)
    table = _New((4096, rd // 2), table_dtype or dtype, contiguous) if rd else None
    p = _kv(block_table=torch.zeros(2, 8, dtype=torch.int32) if page else None, **kw)
    return ck.append_gap(q, cache, cache, new, new, table, table, p)


def test_append_gap_refuses_exactly_what_the_appendkv_glue_cannot_serve(tmp_path, monkeypatch):
    """Rotary dims, page sizes and head dims: ck.append_gap admits an append exactly where the compiled glue and
    dispatcher served it (test above)."""
    r = _run_dispatch(clang_or_skip(), tmp_path, "fwd_appendkv")
    ck, _ = ck_backend()
    monkeypatch.setattr(ck, "_ck", None)                 # the shipped set, whatever is built here
    for d in (128, 80):
        served = {int(x) for x in r[f"rotary_served_d{d}"].split(",") if x}
        for rd in range(2, d + 1, 2):
            assert (_append_gap(ck, d, rd=rd) is None) == (rd in served), (d, rd)
    pages = {int(x) for x in r["pages_served"].split(",") if x}
    for page in (16, 32, 64, 128, 192, 256, 512):
        assert (_append_gap(ck, page=page) is None) == (page in pages), page
    for d in range(8, 265, 8):
        assert (_append_gap(ck, d) is None) == (d <= 256), d
    assert r["d264"] == "0"


def test_append_gap_names_what_ck_appendkv_cannot_do(monkeypatch):
    ck, _ = ck_backend()
    monkeypatch.setattr(ck, "_ck", None)
    assert _append_gap(ck) is None and _append_gap(ck, rd=128, page=256) is None
    assert _append_gap(ck, 80, rd=64, leftpad=torch.zeros(2, dtype=torch.int32)) is None    # leftpad: no matter
    assert _append_gap(ck, rd=64, table_dtype=torch.float32) == (
        "rotary tables in torch.float32 (CK reads them in q's dtype, torch.float16: rounding them would change the "
        "result)")
    assert _append_gap(ck, rd=64, contiguous=False).startswith("rotary tables that are not contiguous")
    assert _append_gap(ck, rd=24) == "rotary_dim 24 (CK's appendkv rotates multiples of 16)"
    assert _append_gap(ck, page=64) == "page size 64 (CK's paged appendkv needs a multiple of 128)"
    q, cache, new = _Cache((2, 1, 8, 128)), _Cache((64, 256, 2, 128)), _Cache((2, 1, 2, 128))
    strided = _kv(block_table=torch.zeros(8, 2, dtype=torch.int32).t())
    assert ck.append_gap(q, cache, cache, new, new, None, None, strided).startswith("a block_table whose last dim")
    assert _append_gap(ck, dtype=torch.float32) == "dtype torch.float32 (CK: float16, bfloat16)"
    assert _append_gap(ck, 264) == "head_dim 264: no appendkv kernel built for it (FA_CK_HDIMS)"
    q, cache = _Cache((2, 1, 8, 128)), _Cache((4, 1000, 2, 128))
    assert ck.append_gap(_Cache((2, 1, 8, 128), cuda=False), cache, cache, cache, cache, None, None, _kv()) \
        == "CPU tensors"
    assert ck.append_gap(_Cache((0, 1, 8, 128)), cache, cache, cache, cache, None, None, _kv()) == "empty tensors"
    huge = _Cache((4, 1000, 2, 128), strides=(2**31, 256, 128, 1))
    assert ck.append_gap(q, huge, huge, cache, cache, None, None, _kv()) == "strides beyond CK's 32-bit indexing"
    fake = type("FakeExt", (), {"kvcache_hdims": [64, 96], "appendkv_hdims": [64, 128], "kvcache_append": None})
    monkeypatch.setattr(ck, "_ck", fake)                 # FA_CK_HDIMS=64,96: d96 runs the d128 appendkv tile
    assert _append_gap(ck, 80) is None and _append_gap(ck, 256).startswith("head_dim 256: no appendkv kernel")
    monkeypatch.setattr(ck, "_ck", type("OldExt", (), {"kvcache_hdims": [64]}))
    assert _append_gap(ck, 64) == "fa_ck._ck was built without appendkv kernels"


def _append_inputs(paged: bool, rotary: bool):
    """CPU tensors of one append: (q, k_cache, v_cache, k, v, lens, cos, sin, KVCacheParams)."""
    b, hq, hkv, d = 2, 4, 2, 32
    cache_shape = (6, 16, hkv, d) if paged else (3, 40, hkv, d)
    k_cache, v_cache = torch.zeros(cache_shape, dtype=torch.float16), torch.zeros(cache_shape, dtype=torch.float16)
    q = torch.randn(b, 1, hq, d, dtype=torch.float16)
    k, v = torch.randn(b, 2, hkv, d, dtype=torch.float16), torch.randn(b, 2, hkv, d, dtype=torch.float16)
    lens = torch.tensor([3, 17], dtype=torch.int32)
    angle = torch.rand(40, 8) * 6.3
    cos, sin = (angle.cos().half(), angle.sin().half()) if rotary else (None, None)
    table = torch.tensor([[5, 0], [2, 4]], dtype=torch.int32) if paged else None
    batch_idx = None if paged else torch.tensor([2, 0], dtype=torch.int32)
    return q, k_cache, v_cache, k, v, lens, cos, sin, _kv(block_table=table, batch_idx=batch_idx)


@pytest.mark.parametrize("paged", [False, True])
def test_kvcache_append_runs_appendkv_where_it_serves_else_torch_ops(paged, monkeypatch):
    """ck.kvcache_append hands CK's appendkv the call's own tensors (a paged row reads its block table only) and
    returns what it returns; where append_gap names a reason it appends with reference.kvcache_append instead."""
    ck, _ = ck_backend()
    from fa_ck import reference
    q, k_cache, v_cache, k, v, lens, cos, sin, p = _append_inputs(paged, rotary=True)
    seen = []
    rotated = torch.empty_like(q)
    fake = type("FakeExt", (), {"kvcache_append": staticmethod(lambda *a: seen.append(a) or rotated)})
    monkeypatch.setattr(ck, "_ck", fake)
    monkeypatch.setattr(ck, "append_gap", lambda *a: None)
    assert ck.kvcache_append(q, k_cache, v_cache, k, v, lens, cos, sin, False, True, p) is rotated
    (args,) = seen
    want = (q, k_cache, v_cache, k, v, lens, None if paged else p.batch_idx, p.block_table, cos, sin, False, True)
    assert len(args) == len(want) and all(a is w for a, w in zip(args, want))
    assert not k_cache.any() and not v_cache.any()         # the fake wrote nothing: no torch op ran
    assert ck.kvcache_append(q, k_cache, v_cache, k, v, lens, None, None, True, False, p) is q   # no rotary: q
    assert seen[1][8:] == (None, None, True, False)
    del seen[1]
    monkeypatch.setattr(ck, "append_gap", lambda *a: "a reason")
    want_k, want_v = k_cache.clone(), v_cache.clone()
    want_q = reference.kvcache_append(q, want_k, want_v, k, v, lens, cos, sin, interleaved=False, q_per_position=True,
                                      batch_idx=p.batch_idx, block_table=p.block_table)
    got_q = ck.kvcache_append(q, k_cache, v_cache, k, v, lens, cos, sin, False, True, p)
    assert len(seen) == 1 and torch.equal(got_q, want_q) and not torch.equal(got_q, q)
    assert torch.equal(k_cache, want_k) and torch.equal(v_cache, want_v) and v_cache.any()


def test_the_interface_appends_through_ck_kvcache_append(monkeypatch):
    """flash_attn_with_kvcache on the ck backend hands its append to ck.kvcache_append (CK's appendkv where it
    serves), with cache_seqlens as an int32 (B,) tensor and the rotary rule for q, never to the interface's torch
    ops; the split-KV forward then reads the updated cache."""
    ck, _ = ck_backend()
    import fa_ck
    from fa_ck import dispatch, reference
    from fa_ck.backends import reference as ref_backend
    q, k_cache, v_cache, k, v, lens, cos, sin, p = _append_inputs(paged=False, rotary=True)
    seen = []
    torch_append = reference.kvcache_append              # what the fake extension appends with

    def fake_append(q, kc, vc, k, v, lens, batch_idx, table, cos, sin, interleaved, q_per_position):
        seen.append((lens.dtype, tuple(lens.shape), batch_idx, table, interleaved, q_per_position))
        return torch_append(q, kc, vc, k, v, lens, cos, sin, interleaved=interleaved,
                                        q_per_position=q_per_position, batch_idx=batch_idx, block_table=table)

    monkeypatch.setattr(ck, "_ck", type("FakeExt", (), {"kvcache_append": staticmethod(fake_append)}))
    monkeypatch.setattr(ck, "available", lambda: (True, "faked"))
    monkeypatch.setattr(ck, "kvcache_unsupported", lambda *a: None)
    monkeypatch.setattr(ck, "append_gap", lambda *a: None)
    monkeypatch.setattr(ck, "kvcache_forward", ref_backend.kvcache_forward)
    monkeypatch.setattr(reference, "kvcache_append", lambda *a, **kw: pytest.fail("the interface's torch ops ran"))
    assert dispatch.choose_kvcache(q, k_cache, v_cache, p, "ck")[0] == "ck"
    want_v = v_cache.clone()
    fa_ck.flash_attn_with_kvcache(q, k_cache, v_cache, k, v, cos, sin, cache_seqlens=3, causal=True,
                                  rotary_interleaved=False, backend="ck")
    assert seen == [(torch.int32, (2,), None, None, False, True)]
    want_v[:2, 3:5] = v                                # rows b (no cache_batch_idx) at cache_seqlens 3, 4
    assert torch.equal(v_cache, want_v) and not torch.equal(k_cache[:2, 3:5], k)   # the keys rotated
