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


# ------------------------------------------------------------------ arguments and messages

@pytest.mark.parametrize("backend", [None, "auto"])
def test_bad_env_backend_names_the_variable(monkeypatch, backend):
    monkeypatch.setenv("FA_CK_BACKEND", "bogus")
    kw = {} if backend is None else {"backend": backend}
    with pytest.raises(ValueError, match="FA_CK_BACKEND must be one of .*got 'bogus'"):
        fa_ck.attention(*_qkv(), **kw)
    with pytest.raises(ValueError, match=r"^backend must be one of .*got 'cuda'"):   # an argument: named as such
        fa_ck.attention(*_qkv(), backend="cuda")
