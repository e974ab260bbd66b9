"""The calling contract at its edges (issue 59): double backward, meta tensors, argument types and
messages, empty heads, flash-attn's window_size types and paged calls. Values against the float64
reference."""
import pytest
import torch
import torch.nn.functional as F

import fa_ck
from fa_ck import ops, reference
from attn_check import FWD_TOL, assert_close, rand, tol
from conftest import DEVICE


def _qkv(b=1, h=2, s=8, d=16, **kw):
    return tuple(torch.randn(b, h, s, d, device=DEVICE, **kw) for _ in range(3))


# ------------------------------------------------------------------ double backward

@pytest.fixture(params=["eager", "custom_op"])
def path(request, monkeypatch):
    """eager: ops._Eager; custom_op: fa_ck::fwd/bwd (torch.compile, subclass and meta tensors)."""
    if request.param == "custom_op":
        monkeypatch.setattr(ops, "_eager", lambda q: False)
    return request.param


@pytest.mark.parametrize("call", ["attention", "flash_attn_func"])
def test_double_backward_raises_instead_of_dropping_fa_ck(path, call):
    q, k, v = _qkv(s=9, requires_grad=True)
    fn = (lambda q, k, v: fa_ck.attention(q, k, v, causal=True)) if call == "attention" else (
        lambda q, k, v: fa_ck.flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                              causal=True).transpose(1, 2))
    out = fn(q, k, v)
    (g,) = torch.autograd.grad(out.pow(2).sum(), q, create_graph=True)
    (want,) = torch.autograd.grad(fn(q, k, v).pow(2).sum(), q)      # create_graph changes no first derivative
    assert torch.equal(g.detach(), want)
    with pytest.raises(NotImplementedError, match="fa_ck: double backward is not supported"):
        (g.pow(2).sum() + q.pow(2).sum()).backward()
    # a gradient of ones (no graph in dout) still depends on q, k, v through the backward
    (g,) = torch.autograd.grad(fn(q, k, v).sum(), k, create_graph=True)
    with pytest.raises(NotImplementedError, match="double backward"):
        g.sum().backward()


def test_create_graph_without_a_second_backward_through_fa_ck_is_fine(path):
    q, k, v = _qkv(requires_grad=True)
    x = torch.randn_like(q, requires_grad=True)
    out = fa_ck.attention(q, k, v) + x.pow(3)
    gq, gx = torch.autograd.grad(out.sum(), (q, x), create_graph=True)
    gx.sum().backward()                                      # the graph reaches no fa_ck backward
    assert torch.allclose(x.grad, 6 * x)


# ------------------------------------------------------------------ meta tensors

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_meta_tensors_give_shapes_and_dtypes(dtype):
    q = torch.empty(2, 4, 5, 8, dtype=dtype, device="meta", requires_grad=True)
    k, v = (torch.empty(2, 2, 7, 8, dtype=dtype, device="meta") for _ in range(2))
    out, lse = fa_ck.attention(q, k, v, causal=True, return_lse=True)
    sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert (out.shape, out.dtype, out.device.type) == (sdpa.shape, dtype, "meta")
    assert (lse.shape, lse.dtype, lse.device.type) == ((2, 4, 5), torch.float32, "meta")
    out.sum().backward()
    assert (q.grad.shape, q.grad.dtype) == (q.shape, dtype)
    qf, kf = q.detach().transpose(1, 2), k.transpose(1, 2)
    out, lse, s = fa_ck.flash_attn_func(qf, kf, kf, dropout_p=0.1, return_attn_probs=True)
    assert [(t.shape, t.dtype, t.device.type) for t in (out, lse, s)] == [
        ((2, 5, 4, 8), dtype, "meta"), ((2, 4, 5), torch.float32, "meta"), ((2, 4, 5, 7), dtype, "meta")]
    qv, kv = torch.empty(10, 4, 8, dtype=dtype, device="meta"), torch.empty(12, 2, 8, dtype=dtype, device="meta")
    cq = torch.tensor([0, 4, 10], dtype=torch.int32, device="meta")
    ck = torch.tensor([0, 5, 12], dtype=torch.int32, device="meta")
    out, lse, s = fa_ck.flash_attn_varlen_func(qv, kv, kv, cq, ck, 6, 7, return_attn_probs=True)
    assert [(t.shape, t.dtype, t.device.type) for t in (out, lse, s)] == [
        ((10, 4, 8), dtype, "meta"), ((4, 10), torch.float32, "meta"), ((2, 4, 6, 7), dtype, "meta")]


# ------------------------------------------------------------------ arguments and messages

@pytest.mark.parametrize("backend", [None, "auto"])
def test_bad_env_backend_names_the_variable(monkeypatch, backend):
    monkeypatch.setenv("FA_CK_BACKEND", "bogus")
    kw = {} if backend is None else {"backend": backend}
    with pytest.raises(ValueError, match="FA_CK_BACKEND must be one of .*got 'bogus'"):
        fa_ck.attention(*_qkv(), **kw)
    with pytest.raises(ValueError, match=r"^backend must be one of .*got 'cuda'"):   # an argument: named as such
        fa_ck.attention(*_qkv(), backend="cuda")


@pytest.mark.parametrize("bad,exc", [(float("nan"), ValueError), (float("inf"), ValueError),
                                     (float("-inf"), ValueError), (True, TypeError), ("0.3", TypeError),
                                     (torch.tensor(0.3), TypeError)])
def test_bad_scale_names_scale(bad, exc):
    q, k, v = _qkv()
    with pytest.raises(exc, match=r"^scale must be (finite|a real number)"):
        fa_ck.attention(q, k, v, scale=bad)
    qf, kf, vf = (t.transpose(1, 2) for t in (q, k, v))
    with pytest.raises(exc, match=r"^softmax_scale must be (finite|a real number)"):
        fa_ck.flash_attn_func(qf, kf, vf, softmax_scale=bad)


def test_numpy_scalars_are_real_numbers():
    np = pytest.importorskip("numpy")
    q, k, v = _qkv(requires_grad=False)
    want = fa_ck.attention(q, k, v, scale=float(np.float32(0.3)))
    for s in (np.float32(0.3), np.float16(0.3), np.float64(0.3), np.int64(1)):
        got = fa_ck.attention(q, k, v, scale=s)
        ref = reference.attention(*(t.transpose(1, 2).double() for t in (q, k, v)), scale=float(s),
                                  dtype=torch.float64)[0].transpose(1, 2)
        assert_close(f"scale={s!r}", got, ref, tol(FWD_TOL, torch.float32, DEVICE))
    assert torch.equal(fa_ck.attention(q, k, v, scale=np.float32(0.3)), want)
    fa_ck.flash_attn_func(q, k, v, softmax_scale=np.float32(0.3), softcap=np.float32(2.0),
                          dropout_p=np.float64(0.0))


@pytest.mark.parametrize("bad", ["x", 1, None])
def test_return_lse_must_be_a_bool(bad):
    q, k, v = _qkv()
    for fn in (fa_ck.attention, fa_ck.explain):
        with pytest.raises(TypeError, match="return_lse must be a bool"):
            fn(q, k, v, return_lse=bad)
    with pytest.raises(TypeError, match="return_lse must be a bool"):
        fa_ck.flash_attn_fp8_func(q, k, v, return_lse=bad)


def test_zero_heads_give_an_empty_result_as_sdpa():
    q = rand(2, 0, 5, 16, dtype=torch.float32, device=DEVICE)
    k, v = (rand(2, 0, 7, 16, dtype=torch.float32, device=DEVICE) for _ in range(2))
    out, lse = fa_ck.attention(q, k, v, causal=True, return_lse=True)
    assert out.shape == F.scaled_dot_product_attention(q, k, v).shape == (2, 0, 5, 16)
    assert lse.shape == (2, 0, 5) and lse.dtype == torch.float32
    grads = torch.autograd.grad(out.sum() + lse.sum(), (q, k, v))
    assert [g.shape for g in grads] == [q.shape, k.shape, v.shape]
    qf, kf = q.detach().transpose(1, 2), k.detach().transpose(1, 2)
    out, lse, s = fa_ck.flash_attn_func(qf, kf, kf, return_attn_probs=True)
    assert (out.shape, lse.shape, s.shape) == ((2, 5, 0, 16), (2, 0, 5), (2, 0, 5, 7))
    cu = torch.tensor([0, 3, 5], dtype=torch.int32, device=DEVICE)
    assert fa_ck.flash_attn_varlen_func(q[0, :, :5].transpose(0, 1), q[0, :, :5].transpose(0, 1),
                                        q[0, :, :5].transpose(0, 1), cu, cu, 3, 3).shape == (5, 0, 16)
    with pytest.raises(ValueError, match="heads of q"):     # query heads with no kv head to read stay refused
        fa_ck.attention(torch.randn(2, 2, 5, 16, device=DEVICE), k, v)


# ------------------------------------------------------------------ flash-attn's forms

def _window_forms():
    forms = [[5, 0], torch.tensor([5, 0]), (torch.tensor(5), torch.tensor(0)), torch.tensor([5, 0], dtype=torch.int32)]
    try:
        import numpy as np
    except ImportError:
        return forms
    return forms + [(np.int64(5), np.int32(0)), np.array([5, 0])]


def test_window_size_takes_any_two_integers():
    q, k, v = (rand(1, 30, 2, 16, dtype=torch.float32, device=DEVICE, requires_grad=False) for _ in range(3))
    want = fa_ck.flash_attn_func(q, k, v, window_size=(5, 0))
    ref = reference.attention(q.double(), k.double(), v.double(), window=(5, 0), dtype=torch.float64)[0]
    assert_close("out", want, ref, tol(FWD_TOL, torch.float32, DEVICE))
    for w in _window_forms():
        assert torch.equal(fa_ck.flash_attn_func(q, k, v, window_size=w), want), f"window_size={w!r}"
        assert torch.equal(fa_ck.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           window_size=w).transpose(1, 2), want)


@pytest.mark.parametrize("bad", [(1, 2, 3), (1.5, 0), (True, 0), torch.tensor([1.0, 0.0]), torch.tensor([[1], [0]]),
                                 torch.tensor([True, False]), "ab", 5, torch.tensor(5), None])
def test_window_size_refuses_what_is_not_two_integers(bad):
    with pytest.raises(TypeError, match="window_size must be two integers"):
        fa_ck.attention(*_qkv(), window_size=bad)


def test_paged_call_names_block_table_before_any_shape_check():
    k_cache = torch.randn(4, 16, 2, 32, device=DEVICE)              # (num_blocks, page_block_size, heads, d)
    q = torch.randn(10, 2, 32, device=DEVICE)
    cu_q = torch.tensor([0, 4, 10], dtype=torch.int32, device=DEVICE)
    cu_k = torch.tensor([0, 20, 50], dtype=torch.int32, device=DEVICE)
    table = torch.arange(4, dtype=torch.int32, device=DEVICE).view(2, 2)
    with pytest.raises(NotImplementedError, match="block_table.*paged KV cache"):
        fa_ck.flash_attn_varlen_func(q, k_cache, k_cache, cu_q, cu_k, 6, 30, block_table=table)
