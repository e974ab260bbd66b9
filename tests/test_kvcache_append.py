"""The triton backend's fused append (kernels/append.py through kvcache_append) against
reference.kvcache_append in float64: the new keys rotated and written in place, the new values
copied, q rotated; every other cache element left exactly as it was (NaN there stays NaN).
Dense caches, cache_batch_idx, and paged caches with pages smaller and larger than a tile."""
import importlib

import pytest
import torch

import fa_ck
from conftest import DEVICE
from fa_ck import reference
from fa_ck.params import KVCacheParams

tb = importlib.import_module("fa_ck.backends.triton")

# one rounding of the float32 result to the cache's dtype: an ulp of 2^-10 (fp16) or 2^-7 (bf16)
TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def make(layout: str, b: int, hkv: int, d: int, dtype, capacity: int, page: int):
    """-> (k_cache, v_cache, batch_idx, block_table), every element NaN."""
    if layout == "paged":
        per_row = capacity // page
        table = torch.randperm(b * per_row + 3)[:b * per_row].view(b, per_row).to(torch.int32)
        shape = (b * per_row + 3, page, hkv, d)
        return (*(torch.full(shape, float("nan"), dtype=dtype) for _ in range(2)), None, table)
    rows = 2 * b if layout == "batch_idx" else b
    idx = torch.randperm(rows)[:b].to(torch.int32) if layout == "batch_idx" else None
    return (*(torch.full((rows, capacity, hkv, d), float("nan"), dtype=dtype) for _ in range(2)), idx, None)


def to(device, *ts):
    return [None if t is None else t.to(device) for t in ts]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout,page", [("dense", 0), ("batch_idx", 0), ("paged", 16), ("paged", 64)])
@pytest.mark.parametrize("rotary", ["", "interleaved", "neox"])
@pytest.mark.parametrize("n_new,sq,q_per_position", [(1, 1, False), (5, 3, True), (0, 2, True)])
def test_append_matches_float64(dtype, layout, page, rotary, n_new, sq, q_per_position):
    torch.manual_seed(n_new * 7 + sq)
    b, hq, hkv, d, capacity = 3, 6, 2, 40, 128
    k_cache, v_cache, batch_idx, table = make(layout, b, hkv, d, dtype, capacity, page or 64)
    lens = torch.tensor([0, 17, capacity - n_new], dtype=torch.int32)
    q = torch.randn(b, sq, hq, d, dtype=dtype)
    k, v = (torch.randn(b, n_new, hkv, d, dtype=dtype) for _ in range(2))
    cos = sin = None
    if rotary:                                     # rotary_dim 24 < d: dims past it stay as they are
        angle = torch.rand(capacity + sq, 12, dtype=torch.float64) * 6.3
        cos, sin = angle.cos().to(dtype), angle.sin().to(dtype)
    want_k, want_v = k_cache.double(), v_cache.double()
    want_q = reference.kvcache_append(q.double(), want_k, want_v, k.double(), v.double(), lens, cos, sin,
                                      interleaved=rotary == "interleaved", q_per_position=q_per_position,
                                      batch_idx=batch_idx, block_table=table, dtype=torch.float64)
    q, k_cache, v_cache, k, v, lens, cos, sin, batch_idx, table = to(
        DEVICE, q, k_cache, v_cache, k, v, lens, cos, sin, batch_idx, table)
    p = KVCacheParams(scale=1.0, seqlens_k=lens + n_new, batch_idx=batch_idx, block_table=table)
    got_q = tb.kvcache_append(q, k_cache, v_cache, k, v, lens, cos, sin, rotary == "interleaved",
                              q_per_position, p)
    tol = TOL[dtype]
    torch.testing.assert_close(k_cache.cpu().double(), want_k, atol=tol, rtol=tol, equal_nan=True)
    torch.testing.assert_close(v_cache.cpu().double(), want_v, atol=0, rtol=0, equal_nan=True)
    torch.testing.assert_close(got_q.cpu().double(), want_q, atol=tol, rtol=tol)
    if not rotary:
        assert got_q is q                          # without rotary q is passed on as it is


@pytest.mark.parametrize("layout", ["dense", "batch_idx", "paged"])
def test_write_outside_the_cache_is_dropped(layout):
    """With the interface's value checks off, a position past the capacity, a cache_batch_idx naming no
    cache row or a block-table entry naming no block must not write anywhere. The caches are the front
    half of buffers twice their size, so a write just past their end would show."""
    b, hkv, d, capacity = 2, 1, 16, 32
    k_cache, v_cache, batch_idx, table = make(layout, b, hkv, d, torch.float16, capacity, 16)
    rows = k_cache.shape[0]
    k_store, v_store = (torch.cat([t, t]) for t in (k_cache, v_cache))      # all NaN
    lens = torch.tensor([capacity, 5], dtype=torch.int32)                   # row 0 is full
    if table is not None:
        table[1, 0] = rows                                                  # row 1's page: the first past the end
    if batch_idx is not None:
        batch_idx = torch.tensor([0, rows], dtype=torch.int32)              # row 1's cache row: likewise
    k, v = (torch.randn(b, 1, hkv, d, dtype=torch.float16) for _ in range(2))
    q = torch.randn(b, 1, 2, d, dtype=torch.float16)
    q, k_store, v_store, k, v, lens, table, batch_idx = to(DEVICE, q, k_store, v_store, k, v, lens, table, batch_idx)
    k_cache, v_cache = k_store[:rows], v_store[:rows]
    p = KVCacheParams(scale=1.0, seqlens_k=lens + 1, block_table=table, batch_idx=batch_idx)
    tb.kvcache_append(q, k_cache, v_cache, k, v, lens, None, None, False, False, p)
    if layout == "dense":                                                   # row 1's token lands; row 0's does not
        assert torch.equal(k_store[1, 5], k[1, 0]) and torch.equal(v_store[1, 5], v[1, 0])
        k_store[1, 5], v_store[1, 5] = float("nan"), float("nan")
    assert torch.isnan(k_store).all() and torch.isnan(v_store).all()


def test_the_interface_appends_through_the_fused_kernel(monkeypatch):
    """backend="triton" appends with kernels/append.py, not reference.kvcache_append's torch ops."""
    def refuse(*args, **kwargs):
        raise AssertionError("the torch append ran")
    monkeypatch.setattr(reference, "kvcache_append", refuse)
    b, hkv, d = 2, 2, 32
    k_cache, v_cache = (torch.zeros(b, 64, hkv, d, dtype=torch.float16, device=DEVICE) for _ in range(2))
    q = torch.randn(b, 1, 4, d, dtype=torch.float16, device=DEVICE)
    k, v = (torch.randn(b, 1, hkv, d, dtype=torch.float16, device=DEVICE) for _ in range(2))
    cos = torch.ones(64, 8, dtype=torch.float16, device=DEVICE)
    fa_ck.flash_attn_with_kvcache(q, k_cache, v_cache, k, v, rotary_cos=cos, rotary_sin=cos * 0,
                                  cache_seqlens=3, backend="triton")
    assert torch.equal(k_cache[:, 3], k[:, 0]) and torch.equal(v_cache[:, 3], v[:, 0])


def test_strided_inputs():
    """New keys and values whose last dim is not contiguous, a rotary table read through strided
    columns: the same caches as the float64 reference."""
    b, hq, hkv, d = 2, 4, 2, 32
    k_cache, v_cache, _, _ = make("dense", b, hkv, d, torch.float16, 64, 0)
    lens = torch.tensor([3, 40], dtype=torch.int32)
    q = torch.randn(b, 1, hq, d, dtype=torch.float16)
    k, v = (torch.randn(b, 1, d, hkv, dtype=torch.float16).transpose(-1, -2) for _ in range(2))
    table = torch.rand(64, 16, dtype=torch.float64) * 6.3
    cos, sin = table.cos().half()[:, ::2], table.sin().half()[:, ::2]           # rotary_dim 16, columns strided
    want_k, want_v = k_cache.double(), v_cache.double()
    want_q = reference.kvcache_append(q.double(), want_k, want_v, k.double(), v.double(), lens, cos, sin,
                                      interleaved=False, dtype=torch.float64)
    q, k_cache, v_cache, k, v, lens, cos, sin = to(DEVICE, q, k_cache, v_cache, k, v, lens, cos, sin)
    got_q = tb.kvcache_append(q, k_cache, v_cache, k, v, lens, cos, sin, False, False,
                              KVCacheParams(scale=1.0, seqlens_k=lens + 1))
    torch.testing.assert_close(k_cache.cpu().double(), want_k, atol=2e-3, rtol=2e-3, equal_nan=True)
    torch.testing.assert_close(v_cache.cpu().double(), want_v, atol=0, rtol=0, equal_nan=True)
    torch.testing.assert_close(got_q.cpu().double(), want_q, atol=2e-3, rtol=2e-3)
