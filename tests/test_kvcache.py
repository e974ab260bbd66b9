"""flash_attn_with_kvcache (issue 61): the float64 reference against a plain implementation written here,
every backend that has a KV-cache path against the reference (triton in the interpreter on the CPU),
the append in place, the argument checks, meta tensors and torch.compile.

Caches are poisoned: every entry that holds no key of the call is NaN (the slots the append fills, the
tail of each row, positions before cache_leftpad, unused rows and pages), so a backend that reads one,
or an append that misses one, shows up as NaN.
"""
import math
import os
import subprocess
import sys
from dataclasses import dataclass

import pytest
import torch

import fa_ck
from fa_ck import dispatch, kvcache, reference
from attn_check import FWD_TOL, assert_close, tol
from conftest import DEVICE


def _has_kvcache(name):
    mod = dispatch.module(name)
    return hasattr(mod, "kvcache_forward") and hasattr(mod, "kvcache_unsupported")


# the largest error of one output element against float64 (outputs are O(1): values of v, averaged)
ELEM_TOL = {torch.float16: 1e-2, torch.bfloat16: 6e-2, torch.float32: 1e-4}
BACKENDS = [pytest.param(name, marks=pytest.mark.skipif(not _has_kvcache(name), reason=f"{name} has no KV-cache "
                                                         "path yet (kvcache_forward in its backend module)"))
            for name in ("reference", "triton")]


# ------------------------------------------------------------------ cases

@dataclass(frozen=True)
class Case:
    b: int = 2
    sq: int = 1
    hq: int = 4
    hk: int = 2
    d: int = 32
    new: int = 1             # new tokens in k and v (0: no k, v)
    cap: int = 48            # keys a row can hold: S_cache (dense), max_blocks * page (paged)
    page: int = 0            # 0: dense cache
    batch_idx: bool = False
    leftpad: bool = False
    rotary: int = 0          # rotary_dim (0: no rotary)
    interleaved: bool = True
    causal: bool = False
    window: tuple = (-1, -1)
    softcap: float = 0.0
    alibi: str = ""          # "h": (Hq,) slopes, "bh": (B, Hq)
    lens: str = "random"     # random | zero | full | int
    scale: float = None


CASES = {
    "decode": Case(),
    "decode_causal_gqa": Case(causal=True, hq=6, hk=2),
    "mqa_rotary": Case(hq=4, hk=1, rotary=32, interleaved=True, causal=True),
    "rotary_neox_partial": Case(sq=5, new=5, rotary=16, interleaved=False, causal=True),
    "rotary_not_causal": Case(sq=5, new=3, rotary=16, interleaved=True),
    "rotary_window": Case(sq=6, new=2, rotary=32, interleaved=False, window=(7, 0)),
    "paged16": Case(page=16, cap=64, sq=3, new=3, causal=True),
    "paged64_rotary": Case(page=64, cap=128, sq=4, new=2, rotary=16, causal=True, hq=4, hk=2),
    "paged256": Case(page=256, cap=512, sq=2, new=1, hq=2, hk=1, d=16),
    "paged_leftpad": Case(page=16, cap=64, sq=2, new=2, leftpad=True, causal=True),
    "batch_idx": Case(batch_idx=True, sq=3, new=2, causal=True),
    "leftpad": Case(leftpad=True, sq=4, new=2, causal=True, b=3),
    "leftpad_rotary_alibi": Case(leftpad=True, sq=3, new=3, rotary=16, alibi="bh", b=3),
    "window_softcap": Case(sq=8, new=4, window=(5, 2), softcap=3.0, cap=40),
    "alibi_h_causal": Case(sq=4, new=4, alibi="h", causal=True, scale=0.3),
    "no_new_keys": Case(new=0, sq=3, causal=True),
    "no_new_keys_full": Case(new=0, sq=2, lens="full"),
    "empty_cache_new": Case(lens="zero", sq=2, new=2, causal=True),
    "empty_cache_nothing": Case(lens="zero", new=0, sq=2),
    "int_lens": Case(lens="int", sq=2, new=2, causal=True, rotary=16),
    "more_queries_than_keys": Case(sq=12, new=1, cap=16, causal=True, lens="zero"),
    "long_prefill": Case(sq=200, new=200, cap=320, hq=2, hk=1, d=16, causal=True, b=1),
}
# the triton backend runs in the interpreter on the CPU: a few small cases
TRITON_CASES = ("decode", "decode_causal_gqa", "paged16", "paged256", "leftpad", "window_softcap",
                "empty_cache_new", "more_queries_than_keys")


def _lengths(c: Case, gen):
    room = c.cap - c.new
    if c.lens == "zero":
        return [0] * c.b
    if c.lens == "full":
        return [room] * c.b
    if c.lens == "int":
        return [int(torch.randint(0, room + 1, (1,), generator=gen))] * c.b
    return torch.randint(0, room + 1, (c.b,), generator=gen).tolist()


def make(c: Case, dtype, device=DEVICE, seed=0):
    """(kwargs of the call, the addresses of each row's keys): caches NaN wherever no key is before the call."""
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64).to(dtype).to(device)

    lens = _lengths(c, gen)
    lp = [int(torch.randint(0, n + 1, (1,), generator=gen)) for n in lens] if c.leftpad else [0] * c.b
    nan = float("nan")
    if c.page:
        mb = c.cap // c.page
        num_blocks = c.b * mb + 3                          # a few blocks no row uses
        table = torch.randperm(num_blocks, generator=gen)[:c.b * mb].view(c.b, mb).to(torch.int32)
        k_cache = torch.full((num_blocks, c.page, c.hk, c.d), nan, dtype=dtype, device=device)
        addr = [[(int(table[b, j // c.page]), j % c.page) for j in range(c.cap)] for b in range(c.b)]
    else:
        rows = torch.randperm(2 * c.b, generator=gen)[:c.b].tolist() if c.batch_idx else list(range(c.b))
        k_cache = torch.full((2 * c.b if c.batch_idx else c.b, c.cap, c.hk, c.d), nan, dtype=dtype, device=device)
        addr = [[(rows[b], j) for j in range(c.cap)] for b in range(c.b)]
    v_cache = k_cache.clone()
    for b in range(c.b):
        for j in range(lp[b], lens[b]):
            k_cache[addr[b][j]] = randn(c.hk, c.d)
            v_cache[addr[b][j]] = randn(c.hk, c.d)
    kw = dict(q=randn(c.b, c.sq, c.hq, c.d), k_cache=k_cache, v_cache=v_cache, causal=c.causal,
              window_size=c.window, softcap=c.softcap, softmax_scale=c.scale)
    if c.new:
        kw.update(k=randn(c.b, c.new, c.hk, c.d), v=randn(c.b, c.new, c.hk, c.d))
    if c.lens == "int":
        kw["cache_seqlens"] = lens[0]
    elif not (c.lens == "full" and c.new == 0):                     # full and no new keys: cache_seqlens=None
        kw["cache_seqlens"] = torch.tensor(lens, dtype=torch.int32, device=device)
    if c.page:
        kw["block_table"] = table.to(device)
    if c.batch_idx:
        kw["cache_batch_idx"] = torch.tensor(rows, dtype=torch.int32, device=device)
    if c.leftpad:
        kw["cache_leftpad"] = torch.tensor(lp, dtype=torch.int32, device=device)
    if c.rotary:
        angle = torch.rand(c.cap + c.sq, c.rotary // 2, generator=gen, dtype=torch.float64) * 2 * math.pi
        kw.update(rotary_cos=angle.cos().to(dtype).to(device), rotary_sin=angle.sin().to(dtype).to(device),
                  rotary_interleaved=c.interleaved)
    if c.alibi:
        shape = (c.hq,) if c.alibi == "h" else (c.b, c.hq)
        kw["alibi_slopes"] = (torch.rand(*shape, generator=gen) * 0.5).to(device)
    return kw, dict(lens=lens, lp=lp, addr=addr)


def _clone(kw):
    return {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}


# ------------------------------------------------------------------ a plain implementation, to check the reference

def _turn(x, cos, sin, pos, interleaved):
    """Rotary as complex multiplication: pair (a, b) is a + ib, turned by cos + i sin of its position."""
    half = cos.shape[1]
    x = x.clone()
    idx_a = torch.arange(0, 2 * half, 2) if interleaved else torch.arange(half)
    idx_b = idx_a + 1 if interleaved else idx_a + half
    for s, p in enumerate(pos):
        z = torch.complex(x[s][..., idx_a].double(), x[s][..., idx_b].double())
        z = z * torch.complex(cos[p].double(), sin[p].double())
        x[s][..., idx_a], x[s][..., idx_b] = z.real.to(x.dtype), z.imag.to(x.dtype)
    return x


def plain(kw, info):
    """Row by row: rotate, write the new tokens, and attend over cat(the row's cached keys, the new keys)."""
    q, k_cache, v_cache = kw["q"], kw["k_cache"].clone(), kw["v_cache"].clone()
    b_, sq, hq, d = q.shape
    k, v = kw.get("k"), kw.get("v")
    n = 0 if k is None else k.shape[1]
    scale = kw.get("softmax_scale") or 1 / math.sqrt(d)
    left, right = kw.get("window_size", (-1, -1))
    right = 0 if kw.get("causal") else right
    cap = len(info["addr"][0])
    outs, lses = torch.zeros(b_, sq, hq, d, dtype=torch.float64), torch.zeros(b_, hq, sq, dtype=torch.float64)
    for b in range(b_):
        cs, lp, addr = info["lens"][b], info["lp"][b], info["addr"][b]
        qb, kb = q[b], None if k is None else k[b]
        if "rotary_cos" in kw:
            cos, sin, inter = kw["rotary_cos"], kw["rotary_sin"], kw["rotary_interleaved"]
            windowed = any(0 <= w < cap for w in kw.get("window_size", (-1, -1)))
            per_pos = kw.get("causal") or windowed
            qb = _turn(qb, cos, sin, [cs + i if per_pos else cs for i in range(sq)], inter)
            kb = _turn(kb, cos, sin, [cs + t for t in range(n)], inter)
        cached = [j for j in range(lp, cs)]
        keys = torch.stack([k_cache[addr[j]] for j in cached] + [kb[t] for t in range(n)]) if cs - lp + n else None
        vals = torch.stack([v_cache[addr[j]] for j in cached] + [v[b][t] for t in range(n)]) if cs - lp + n else None
        for t in range(n):
            k_cache[addr[cs + t]], v_cache[addr[cs + t]] = kb[t], v[b][t]
        sk = cs - lp + n
        for h in range(hq):
            hk = h // (hq // k_cache.shape[2])
            for i in range(sq):
                qpos = sk - sq + i
                ok = [j for j in range(sk) if (left < 0 or qpos - j <= left) and (right < 0 or j - qpos <= right)]
                if not ok:
                    lses[b, h, i] = -math.inf
                    continue
                s = scale * (keys[ok, hk].double() @ qb[i, h].double())
                if kw.get("softcap"):
                    s = kw["softcap"] * torch.tanh(s / kw["softcap"])
                if kw.get("alibi_slopes") is not None:
                    sl = kw["alibi_slopes"]
                    slope = (sl[h] if sl.dim() == 1 else sl[b, h]).double()
                    s = s - slope * torch.tensor([abs(qpos - j) for j in ok], dtype=torch.float64)
                lses[b, h, i] = torch.logsumexp(s, 0)
                outs[b, i, h] = torch.softmax(s, 0) @ vals[ok, hk].double()
    return outs, lses, k_cache, v_cache


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_matches_a_plain_implementation(name):
    c = CASES[name]
    kw, info = make(c, torch.float64, "cpu", seed=1)
    out, lse, kc, vc = reference.flash_attn_with_kvcache(**_clone(kw), dtype=torch.float64)
    want_out, want_lse, want_kc, want_vc = plain(kw, info)
    torch.testing.assert_close(out, want_out, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(lse, want_lse, rtol=1e-12, atol=1e-12)        # -inf where a row sees no key
    torch.testing.assert_close(kc, want_kc, rtol=1e-12, atol=1e-12, equal_nan=True)
    torch.testing.assert_close(vc, want_vc, rtol=0, atol=0, equal_nan=True)
    assert torch.isfinite(out).all()


# ------------------------------------------------------------------ the call against the reference

@pytest.fixture(params=["eager", "custom_op"])
def path(request, monkeypatch):
    """eager: plain tensors skip the op's dispatch; custom_op: fa_ck::fwd_kvcache itself (torch.compile's)."""
    if request.param == "custom_op":
        monkeypatch.setattr(kvcache, "_plain", lambda q: False)
    return request.param


def _bits(t):
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def check_call(c: Case, dtype, backend, seed=0):
    kw, info = make(c, dtype, seed=seed)
    before = _clone(kw)
    ref_out, ref_lse, ref_kc, ref_vc = reference.flash_attn_with_kvcache(**_clone(kw), dtype=torch.float64)
    out, lse = fa_ck.flash_attn_with_kvcache(**kw, return_softmax_lse=True, backend=backend)
    assert out.dtype == dtype and lse.dtype == torch.float32 and lse.shape == (c.b, c.hq, c.sq)
    bound = tol(FWD_TOL, dtype, DEVICE)
    assert_close("out", out, ref_out, bound)
    assert_close("lse", lse, ref_lse, bound * 10)
    assert torch.isfinite(out).all(), "NaN in out: a poisoned cache entry was read"
    # and element by element: one wrong element in a large output hides in the norm
    elem = ELEM_TOL[dtype] if dtype != torch.float32 or DEVICE == "cpu" else 5e-3
    worst = (out.double() - ref_out).abs().max().item()
    assert worst <= elem, f"out: an element is {worst:.3g} off (> {elem})"
    seen = torch.isfinite(ref_lse)
    if seen.any():
        assert (lse.double() - ref_lse)[seen].abs().max().item() <= elem, "lse: an element is off"
    # the append: new slots hold the new tokens (k rotated), every other entry is untouched, bit for bit
    kc, vc = kw["k_cache"], kw["v_cache"]
    written = torch.zeros(kc.shape[:2], dtype=torch.bool, device=kc.device)
    for b in range(c.b):
        for t in range(c.new):
            written[info["addr"][b][info["lens"][b] + t]] = True
    assert torch.equal(_bits(vc[written]), _bits(ref_vc[written])), "v appended wrongly"
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(kc[written].double(), ref_kc[written].double(), rtol=2 * eps, atol=8 * eps)
    for got, old in ((kc, before["k_cache"]), (vc, before["v_cache"])):
        assert torch.equal(_bits(got[~written]), _bits(old[~written])), "a cache entry outside the append changed"
    for name in ("q", "k", "v"):
        if name in kw:
            assert torch.equal(kw[name], before[name]), f"{name} changed"
    return out, lse


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_backend_against_float64(name, path):
    check_call(CASES[name], torch.float16, "reference")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("name", ["paged16", "rotary_neox_partial", "leftpad_rotary_alibi"])
def test_reference_backend_dtypes(name, dtype):
    check_call(CASES[name], dtype, "reference")


@pytest.mark.parametrize("name", TRITON_CASES)
@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_triton_against_float64(name, backend, path):
    check_call(CASES[name], torch.float16, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_auto_and_forced_backends_agree(backend):
    c = CASES["decode_causal_gqa"]
    out_auto, _ = check_call(c, torch.float16, "auto")
    out_forced, _ = check_call(c, torch.float16, backend)
    assert_close("auto vs forced", out_auto, out_forced.double(), tol(FWD_TOL, torch.float16, DEVICE))


def test_decode_steps_build_the_cache_as_one_long_call():
    """Ten one-token steps with rotary leave the cache, and the last query's output, as the reference says."""
    c = Case(b=2, sq=1, new=1, cap=32, rotary=16, causal=True, lens="zero")
    kw, _ = make(c, torch.float32)
    ref_kc, ref_vc = kw["k_cache"].clone(), kw["v_cache"].clone()
    for step in range(10):
        q, k, v = (torch.randn(2, 1, c.hq if n == "q" else c.hk, c.d, device=DEVICE) for n in "qkv")
        lens = torch.full((2,), step, dtype=torch.int32, device=DEVICE)
        out = fa_ck.flash_attn_with_kvcache(q, kw["k_cache"], kw["v_cache"], k, v, kw["rotary_cos"], kw["rotary_sin"],
                                            cache_seqlens=lens, causal=True, rotary_interleaved=c.interleaved)
        ref_out, _, ref_kc, ref_vc = reference.flash_attn_with_kvcache(
            q, ref_kc, ref_vc, k, v, kw["rotary_cos"], kw["rotary_sin"], lens, causal=True,
            rotary_interleaved=c.interleaved, dtype=torch.float64)
        assert_close(f"step {step}", out, ref_out, tol(FWD_TOL, torch.float32, DEVICE))
    torch.testing.assert_close(kw["k_cache"][:, :10], ref_kc[:, :10].float(), rtol=1e-6, atol=1e-6)
    assert torch.isnan(kw["k_cache"][:, 10:]).all()


def test_caches_that_are_views_of_one_buffer_are_written_through():
    """k_cache and v_cache as strided views of one (B, S, 2, H, D) buffer: the append lands in the buffer."""
    kv = torch.randn(2, 16, 2, 2, 8, device=DEVICE)
    q, k, v = torch.randn(2, 1, 2, 8, device=DEVICE), torch.randn(2, 1, 2, 8, device=DEVICE), \
        torch.randn(2, 1, 2, 8, device=DEVICE)
    lens = torch.tensor([3, 9], dtype=torch.int32, device=DEVICE)
    ref = reference.flash_attn_with_kvcache(q, kv[:, :, 0], kv[:, :, 1], k, v, cache_seqlens=lens, dtype=torch.float64)
    out = fa_ck.flash_attn_with_kvcache(q, kv[:, :, 0], kv[:, :, 1], k, v, cache_seqlens=lens)
    assert_close("out", out, ref[0], 1e-5)
    assert torch.equal(kv[0, 3, 0], k[0, 0]) and torch.equal(kv[1, 9, 1], v[1, 0])


def test_new_keys_of_length_zero_append_nothing():
    kw, _ = make(CASES["no_new_keys"], torch.float32)
    before = kw["k_cache"].clone()
    empty = torch.empty(kw["q"].shape[0], 0, kw["k_cache"].shape[2], kw["q"].shape[3], device=DEVICE)
    out = fa_ck.flash_attn_with_kvcache(**kw, k=empty, v=empty)
    assert_close("out", out, reference.flash_attn_with_kvcache(**kw, dtype=torch.float64)[0], 1e-5)
    assert torch.equal(_bits(kw["k_cache"]), _bits(before))


def test_unreached_block_table_entries_may_hold_anything():
    """vLLM-style tables pad rows with junk past their pages: only the entries a call reaches are checked."""
    kw, _ = make(Case(page=16, cap=64, lens="zero", new=2), torch.float32)
    kw["block_table"][:, 1:] = -1
    out = fa_ck.flash_attn_with_kvcache(**kw)
    assert torch.isfinite(out).all()
    kw["block_table"][1, 0] = 10 ** 6
    with pytest.raises(ValueError, match=r"block_table\[1, 0\] = 1000000 names no block"):
        fa_ck.flash_attn_with_kvcache(**kw)


# ------------------------------------------------------------------ argument checks

def _base():
    kw, _ = make(Case(sq=2, new=1, cap=16, rotary=8, causal=True), torch.float16, seed=3)
    kw["cache_seqlens"] = _i32(5, 9)
    return kw


def _i32(*vals):
    return torch.tensor(vals, dtype=torch.int32, device=DEVICE)


def _set(**changes):
    return lambda kw: kw.update(changes)


def _edit(key, fn):
    return lambda kw: kw.update({key: fn(kw[key])})


ERRORS = [
    ("q_not_tensor", _set(q=[1.0]), TypeError, "q must be a torch.Tensor"),
    ("q_rank", _edit("q", lambda t: t[0]), ValueError, "q must be 4-D"),
    ("q_dtype", _edit("q", lambda t: t.double()), TypeError, "q must be float16, bfloat16 or float32"),
    ("k_cache_dtype", _edit("k_cache", lambda t: t.float()), TypeError, "k_cache must have q's dtype"),
    ("v_cache_shape", _edit("v_cache", lambda t: t[:, :8]), ValueError, "k_cache and v_cache must have the same"),
    ("k_cache_rank", _edit("k_cache", lambda t: t[0]), ValueError, "k_cache must be 4-D"),
    ("k_cache_last_dim", _edit("k_cache", lambda t: t.transpose(2, 3).contiguous().transpose(2, 3)), ValueError,
     "k_cache must have a contiguous last dim"),
    ("head_dim", _edit("q", lambda t: t[..., :16]), ValueError, r"head_dim of q \(16\) and k_cache \(32\)"),
    ("heads", _edit("q", lambda t: t[:, :, :3]), ValueError, r"heads of q \(3\) must be a multiple"),
    ("k_without_v", _set(v=None), ValueError, "k was given without v"),
    ("v_without_k", _set(k=None), ValueError, "v was given without k"),
    ("k_heads", _edit("k", lambda t: t[:, :, :1]), ValueError, "k must be"),
    ("v_shape", _edit("v", lambda t: torch.cat([t, t], 1)), ValueError, "k and v must have the same shape"),
    ("k_dtype", _edit("k", lambda t: t.float()), TypeError, "k must have q's dtype"),
    ("k_device", _edit("k", lambda t: t.to("meta")), ValueError, "k must be on"),
    ("cache_seqlens_needed", _set(cache_seqlens=None), ValueError, "cache_seqlens is needed with k and v"),
    ("cache_seqlens_float", _set(cache_seqlens=3.0), TypeError, "cache_seqlens must be an int"),
    ("cache_seqlens_int64", _edit("cache_seqlens", lambda t: t.long()), TypeError, "cache_seqlens must be torch.int32"),
    ("cache_seqlens_shape", _edit("cache_seqlens", lambda t: t[:1]), ValueError,
     r"cache_seqlens must have shape \(2,\)"),
    ("cache_too_short_int", _set(cache_seqlens=16), ValueError, r"cache_seqlens \(16\) plus the 1 new tokens"),
    ("cache_too_short", _set(cache_seqlens=_i32(3, 16)), ValueError,
     r"cache_seqlens\[1\] = 16: .* capacity \(16 per row\)"),
    ("cache_seqlens_negative", _set(cache_seqlens=_i32(-1, 0)), ValueError,
     r"cache_seqlens\[0\] = -1"),
    ("cache_leftpad_past_seqlens", _set(cache_leftpad=_i32(0, 15),
                                        cache_seqlens=_i32(0, 14)),
     ValueError, r"cache_leftpad\[1\] = 15"),
    ("cache_leftpad_dtype", _set(cache_leftpad=_i32(0, 0).long()), TypeError, "cache_leftpad must be torch.int32"),
    ("cache_batch_idx_range", _set(cache_batch_idx=_i32(0, 2)), ValueError,
     r"cache_batch_idx\[1\] = 2 names no row"),
    ("cache_batch_idx_shape", _set(cache_batch_idx=_i32(0)), ValueError,
     "cache_batch_idx must have shape"),
    ("too_few_cache_rows", lambda kw: kw.update(k_cache=kw["k_cache"][:1], v_cache=kw["v_cache"][:1]), ValueError,
     r"k_cache holds 1 rows, fewer than q's batch \(2\)"),
    ("block_table_with_batch_idx", _set(block_table=_i32(0, 0).view(2, 1),
                                        cache_batch_idx=_i32(0, 1)),
     ValueError, "cache_batch_idx cannot be used with block_table"),
    ("block_table_dtype", _set(block_table=_i32(0, 0).view(2, 1).long()), TypeError, "block_table must be "
     "torch.int32"),
    ("block_table_batch", _set(block_table=_i32(0, 0, 0).view(3, 1)), ValueError,
     r"block_table must be \(batch, max_blocks\)"),
    ("block_table_entry", _set(block_table=_i32(0, 2).view(2, 1)), ValueError,
     r"block_table\[1, 0\] = 2 names no block"),
    ("rotary_cos_alone", _set(rotary_sin=None), ValueError, "rotary_cos was given alone"),
    ("rotary_without_k", _set(k=None, v=None, cache_seqlens=None), ValueError, "they need k and v"),
    ("rotary_too_wide", lambda kw: kw.update(rotary_cos=kw["rotary_cos"].repeat(1, 5),
                                             rotary_sin=kw["rotary_sin"].repeat(1, 5)), ValueError,
     r"rotary_cos must be \(seqlen_ro, rotary_dim / 2\) with 2 <= rotary_dim <= head_dim \(32\)"),
    ("rotary_shapes", _edit("rotary_sin", lambda t: t[:, :2]), ValueError, "rotary_cos and rotary_sin must have"),
    ("rotary_dtype", _edit("rotary_cos", lambda t: t.int()), TypeError, "rotary_cos must be a floating-point"),
    ("rotary_too_short", lambda kw: kw.update(rotary_cos=kw["rotary_cos"][:5], rotary_sin=kw["rotary_sin"][:5]),
     ValueError, r"rotary_cos/rotary_sin have 5 positions; batch row 0 needs positions up to 6"),
    ("rotary_interleaved", _set(rotary_interleaved=1), TypeError, "rotary_interleaved must be a bool"),
    ("causal", _set(causal=None), TypeError, "causal must be a bool"),
    ("window_type", _set(window_size=(1.5, 0)), TypeError, "window_size must be two integers"),
    ("window_value", _set(window_size=(-2, 0)), ValueError, "window_size values must be >= 0"),
    ("softcap", _set(softcap=-1.0), ValueError, "softcap must be >= 0.0, got -1.0"),
    ("softmax_scale", _set(softmax_scale="0.5"), TypeError, "softmax_scale must be a real number"),
    ("alibi_dtype", _set(alibi_slopes=torch.ones(4, dtype=torch.float64, device=DEVICE)), TypeError,
     "alibi_slopes must be"),
    ("alibi_shape", _set(alibi_slopes=torch.ones(3, device=DEVICE)), ValueError, "alibi_slopes must have shape"),
    ("num_splits_negative", _set(num_splits=-1), ValueError, "num_splits must be an int >= 0"),
    ("num_splits_float", _set(num_splits=1.5), TypeError, "num_splits must be an int >= 0"),
    ("num_splits_bool", _set(num_splits=True), TypeError, "num_splits must be an int >= 0"),
    ("return_softmax_lse", _set(return_softmax_lse=1), TypeError, "return_softmax_lse must be a bool"),
    ("backend_name", _set(backend="cudnn"), ValueError, "backend must be one of"),
    ("backend_type", _set(backend=None), TypeError, "backend must be a str"),
    ("backend_without_kvcache", _set(backend="sdpa"), NotImplementedError, "'sdpa' cannot serve .* no KV-cache path"),
]


@pytest.mark.parametrize("name,edit,exc,match", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_arguments_name_the_argument_and_touch_nothing(name, edit, exc, match):
    kw = _base()
    edit(kw)
    before = (kw["k_cache"].clone(), kw["v_cache"].clone()) if isinstance(kw.get("k_cache"), torch.Tensor) else None
    with pytest.raises(exc, match=match):
        fa_ck.flash_attn_with_kvcache(**kw)
    if before is not None and kw["k_cache"].shape == before[0].shape:
        assert torch.equal(_bits(kw["k_cache"]), _bits(before[0])) and torch.equal(_bits(kw["v_cache"]),
                                                                                     _bits(before[1]))
    if exc is not NotImplementedError:
        with pytest.raises(exc, match=match):
            fa_ck.explain_kvcache(**kw)


def test_value_checks_can_be_turned_off(monkeypatch):
    kw = _base()
    kw.update(cache_leftpad=_i32(0, 15), cache_seqlens=_i32(0, 14))
    monkeypatch.setenv("FA_CK_KVCACHE_CHECKS", "0")
    out = fa_ck.flash_attn_with_kvcache(**kw)     # a leftpad past the keys, unchecked: row 1 sees no key
    assert torch.equal(out[1], torch.zeros_like(out[1]))


# ------------------------------------------------------------------ explain, meta tensors, torch.compile

def test_explain_names_each_backend_and_its_reason():
    kw = _base()
    text = fa_ck.explain_kvcache(**kw)
    head, *lines, last = text.splitlines()
    assert "dense" in head and "rotary" in head and "1 new tokens" in head and "causal" in head
    chosen = last.removeprefix("-> ")
    assert lines[-1].strip() == f"{chosen}: chosen" and all("skipped" in line for line in lines[:-1])
    for line in lines[:-1]:
        name = line.split(":")[0].strip()
        assert _has_kvcache(name) or line.strip() == f"{name}: skipped, no KV-cache path"
    text = fa_ck.explain_kvcache(**kw, backend="sdpa")
    assert "-> no backend" in text and "no KV-cache path" in text


def test_meta_tensors_give_shapes_and_write_nothing():
    q = torch.empty(3, 5, 8, 64, dtype=torch.bfloat16, device="meta")
    kc, vc = (torch.empty(40, 16, 2, 64, dtype=torch.bfloat16, device="meta") for _ in range(2))
    k, v = (torch.empty(3, 5, 2, 64, dtype=torch.bfloat16, device="meta") for _ in range(2))
    table = torch.empty(3, 8, dtype=torch.int32, device="meta")
    lens = torch.empty(3, dtype=torch.int32, device="meta")
    cos = torch.empty(128, 16, dtype=torch.bfloat16, device="meta")
    out, lse = fa_ck.flash_attn_with_kvcache(q, kc, vc, k, v, cos, cos, cache_seqlens=lens, block_table=table,
                                             causal=True, return_softmax_lse=True)
    assert (out.shape, out.dtype, out.device.type) == ((3, 5, 8, 64), torch.bfloat16, "meta")
    assert (lse.shape, lse.dtype, lse.device.type) == ((3, 8, 5), torch.float32, "meta")


_COMPILE_STEP = """
import sys, torch, fa_ck
from fa_ck import reference
backend, device, dtype = sys.argv[1], sys.argv[2], getattr(torch, sys.argv[3])
torch.manual_seed(0)
kc, vc = (torch.zeros(2, 32, 2, 16, device=device, dtype=dtype) for _ in range(2))
angle = torch.rand(64, 4, device=device) * 6.28
cos, sin = angle.cos(), angle.sin()

def step(q, k, v, lens):
    return fa_ck.flash_attn_with_kvcache(q, kc, vc, k, v, cos, sin, cache_seqlens=lens, causal=True,
                                         return_softmax_lse=True, backend=backend)

compiled = torch.compile(step, fullgraph=True, backend="aot_eager")       # fullgraph: a graph break raises
ref_k, ref_v, err = kc.clone(), vc.clone(), 0.0
for t in range(3):                          # decode steps: the first fa_ck call of the process is traced
    q, k, v = (torch.randn(2, 1, h, 16, device=device).to(dtype) for h in (4, 2, 2))
    lens = torch.tensor([t, 2 * t], dtype=torch.int32, device=device)
    out, lse = compiled(q, k, v, lens)
    want, want_lse, ref_k, ref_v = reference.flash_attn_with_kvcache(q, ref_k, ref_v, k, v, cos, sin, lens,
                                                                     causal=True, dtype=torch.float64)
    err = max(err, float((out.double() - want).abs().max()), float((lse.double() - want_lse).abs().max()),
              float((kc.double() - ref_k).abs().max()), float((vc.double() - ref_v).abs().max()))
print(err)
"""


@pytest.mark.parametrize("backend", ["auto"] + BACKENDS)
def test_torch_compile_fullgraph_decode_step_in_a_fresh_process(backend):
    # the decode kernels take 16-bit caches; the others are checked in float32's exact sums
    dtype = "float16" if backend == "triton" else "float32"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-c", _COMPILE_STEP, backend, DEVICE, dtype], capture_output=True,
                         text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert float(run.stdout.split()[-1]) < (2e-3 if dtype == "float16" else 1e-5)


def test_reference_kvcache_pieces_agree_with_the_whole():
    """attention_kvcache over the cache after the append is the whole call's attention (what backends serve)."""
    kw, info = make(CASES["paged_leftpad"], torch.float64, "cpu")
    out, lse, kc, vc = reference.flash_attn_with_kvcache(**_clone(kw), dtype=torch.float64)
    lens = kw["cache_seqlens"] + kw["k"].shape[1]
    out2, lse2 = reference.attention_kvcache(kw["q"], kc, vc, lens, leftpad=kw["cache_leftpad"],
                                             block_table=kw["block_table"], causal=True, dtype=torch.float64)
    assert torch.equal(out, out2) and torch.equal(lse, lse2)


def test_rotary_rule_for_queries_follows_flash_attn():
    """Not causal and no window: every query at position cache_seqlens; a window bound at or past the
    capacity is no window (flash-attn's rule), so queries then share one position too."""
    kw, _ = make(Case(sq=4, new=1, cap=16, rotary=8), torch.float64, "cpu")
    del kw["window_size"]
    base = reference.flash_attn_with_kvcache(**_clone(kw), dtype=torch.float64)[0]
    far = reference.flash_attn_with_kvcache(**_clone(kw), window_size=(16, -1), dtype=torch.float64)[0]
    near = reference.flash_attn_with_kvcache(**_clone(kw), window_size=(15, -1), dtype=torch.float64)[0]
    assert torch.equal(base, far) and not torch.equal(base, near)
    low = {**kw, **{n: kw[n].float().to(DEVICE) for n in ("q", "k", "v", "k_cache", "v_cache", "rotary_cos",
                                                           "rotary_sin", "cache_seqlens")}}
    low["cache_seqlens"] = low["cache_seqlens"].int()
    for window, want in (((16, -1), far), ((15, -1), near)):
        got = fa_ck.flash_attn_with_kvcache(**_clone(low), window_size=window)
        assert_close(f"window {window}", got.cpu(), want, 1e-5)


def test_case_table_covers_the_issue():
    cases = list(CASES.values())
    assert {c.page for c in cases} >= {0, 16, 64, 256}
    assert {c.sq for c in cases} >= {1, 200} and any(c.lens == "zero" and c.new == 0 for c in cases)
    assert any(c.rotary and c.rotary < c.d for c in cases) and {c.interleaved for c in cases if c.rotary} == {True,
                                                                                                            False}
    assert any(c.hk == 1 for c in cases) and any(c.hq // c.hk > 1 and c.hk > 1 for c in cases)
