"""The public API: SDPA drop-in, flash-attn forms, backends()/explain(), torch.compile, edge cases."""
import pytest
import torch
import torch.nn.functional as F

import fa_ck
from fa_ck import reference
from attn_check import FWD_TOL, alibi, assert_close, check, rand, tol
from conftest import DEVICE


def test_sdpa_drop_in_layout_and_scale():
    q, k, v = (rand(2, 4, 37, 32, dtype=torch.float32, device=DEVICE) for _ in range(3))
    out = fa_ck.attention(q, k, v, causal=True, scale=0.3)
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True, scale=0.3)
    assert out.shape == (2, 4, 37, 32) and out.dtype == q.dtype
    assert_close("out", out, ref, tol(FWD_TOL, torch.float32, DEVICE))


def test_return_lse_and_gqa_without_repeat():
    q = rand(1, 8, 20, 16, dtype=torch.float32, device=DEVICE)
    k, v = (rand(1, 2, 30, 16, dtype=torch.float32, device=DEVICE) for _ in range(2))
    out, lse = fa_ck.attention(q, k, v, return_lse=True)
    assert lse.shape == (1, 8, 20) and lse.dtype == torch.float32
    ref, ref_lse = reference.attention(q.transpose(1, 2).double(), k.transpose(1, 2).double(),
                                       v.transpose(1, 2).double(), dtype=torch.float64)
    assert_close("out", out.transpose(1, 2), ref, tol(FWD_TOL, torch.float32, DEVICE))
    assert_close("lse", lse, ref_lse, 10 * tol(FWD_TOL, torch.float32, DEVICE))


@pytest.mark.parametrize("backend", ["reference", "sdpa", "triton"])
def test_backends_agree(backend):
    q, k, v = (rand(2, 4, 25, 32, dtype=torch.float32, device=DEVICE) for _ in range(3))
    out = fa_ck.attention(q, k, v, causal=True, backend=backend)
    do = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), do)
    ref = F.scaled_dot_product_attention(*(t.double() for t in (q, k, v)), is_causal=True)
    assert_close("out", out, ref, 1e-5 if DEVICE == "cpu" else 5e-3)
    refs = torch.autograd.grad(ref, (q, k, v), do.double())
    for g, r in zip(grads, refs):
        assert_close("grad", g, r.to(g.dtype), 1e-4 if DEVICE == "cpu" else 5e-3)


@pytest.mark.parametrize("backend", ["sdpa", "reference"])
@pytest.mark.parametrize("per_batch", [False, True])
def test_alibi_on_the_other_backends(backend, per_batch):
    # sdpa gets ALiBi as an additive bias (with the bottom-right causal mask folded in)
    check(2, 12, 20, 4, 2, 16, device=DEVICE, backend=backend, causal=True,
          alibi_slopes=alibi(2, 4, per_batch, DEVICE))


def test_packed_forms_match_unpacked():
    qkv = rand(2, 30, 3, 4, 32, dtype=torch.float32, device=DEVICE)
    a = fa_ck.flash_attn_qkvpacked_func(qkv, causal=True)
    b = fa_ck.flash_attn_func(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], causal=True)
    c = fa_ck.flash_attn_kvpacked_func(qkv[:, :, 0], qkv[:, :, 1:], causal=True)
    assert torch.equal(a, b) and torch.equal(a, c)
    a.sum().backward()
    assert qkv.grad is not None and torch.isfinite(qkv.grad).all()
    cu = torch.tensor([0, 12, 30], dtype=torch.int32, device=DEVICE)
    flat = qkv[0].detach()                                           # (30, 3, 4, 32) as 2 sequences
    va = fa_ck.flash_attn_varlen_qkvpacked_func(flat, cu, 18, causal=True)
    vb = fa_ck.flash_attn_varlen_kvpacked_func(flat[:, 0], flat[:, 1:], cu, cu, 18, 18, causal=True)
    assert torch.equal(va, vb)


def test_backends_and_explain():
    info = fa_ck.backends()
    assert set(info) == {"ck", "triton", "sdpa", "reference"}
    assert info["reference"][0] is True
    assert info["ck"][0] is False and info["ck"][1]            # no ROCm here: says why
    q, k, v = (torch.randn(1, 2, 8, 16, device=DEVICE) for _ in range(3))
    text = fa_ck.explain(q, k, v, causal=True, softcap=2.0)
    assert "softcap" in text and "ck" in text and text.strip().splitlines()[-1].startswith("-> ")
    assert "sdpa" in fa_ck.explain(q, k, v, backend="sdpa").splitlines()[-1]


def test_forced_backend_never_falls_back():
    q, k, v = (torch.randn(1, 2, 8, 16, device=DEVICE) for _ in range(3))
    with pytest.raises(NotImplementedError, match="softcap"):
        fa_ck.attention(q, k, v, softcap=3.0, backend="sdpa")
    with pytest.raises(NotImplementedError, match="ck"):
        fa_ck.attention(q, k, v, backend="ck")


def test_env_forces_backend(monkeypatch):
    q, k, v = (torch.randn(1, 2, 8, 16, device=DEVICE) for _ in range(3))
    monkeypatch.setenv("FA_CK_BACKEND", "sdpa")
    assert fa_ck.explain(q, k, v).splitlines()[-1] == "-> sdpa"
    monkeypatch.setenv("FA_CK_BACKEND", "nonsense")
    with pytest.raises(ValueError, match="backend"):
        fa_ck.attention(q, k, v)


# ------------------------------------------------------------------ torch.compile

class _Block(torch.nn.Module):
    def __init__(self, d=32, h=2):
        super().__init__()
        self.h = h
        self.qkv = torch.nn.Linear(d, 3 * d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        y = fa_ck.attention(q, k, v, causal=True)
        return y.transpose(1, 2).reshape(b, t, c)


def test_torch_compile_fullgraph_no_graph_break():
    torch._dynamo.reset()
    model = _Block().to(DEVICE)
    x = torch.randn(2, 24, 32, device=DEVICE, requires_grad=True)
    eager = model(x)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")   # fullgraph: a break raises
    out = compiled(x)
    assert_close("compiled", out, eager.detach(), 1e-6)
    out.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    explanation = torch._dynamo.explain(model)(x)
    assert explanation.graph_break_count == 0


_COMPILE_FIRST = """
import sys, torch, fa_ck
backend, device = sys.argv[1], sys.argv[2]
q = torch.randn(1, 2, 19, 32, device=device, requires_grad=True)
f = torch.compile(lambda a: fa_ck.attention(a, a, a, causal=True, backend=backend), fullgraph=True,
                  backend="aot_eager")
out = f(q)                              # the first fa_ck call of the process, traced
out.sum().backward()
x = q.detach().double().transpose(1, 2)          # the reference's layout: (B, S, H, D)
want = fa_ck.reference.attention(x, x, x, causal=True, dtype=torch.float64)[0].transpose(1, 2)
print(float((out.double() - want).abs().max()), bool(torch.isfinite(q.grad).all()))
"""


@pytest.mark.parametrize("backend", ["auto", "triton", "reference"])
def test_torch_compile_before_any_eager_call(backend):
    """A fresh process whose first fa_ck call is inside torch.compile(fullgraph=True): nothing is
    imported inside the traced region (a lazy import there is a dynamo error)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-c", _COMPILE_FIRST, backend, DEVICE], capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    err, finite = run.stdout.split()[-2:]
    assert float(err) < 1e-5 and finite == "True"


@pytest.mark.gpu
@pytest.mark.skipif(DEVICE == "cpu", reason="inductor through our op on a GPU (the CPU run uses aot_eager above)")
def test_torch_compile_inductor_matches_eager():
    # the default backend: inductor compiles the code around our op and calls it as an opaque op
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _Block(d=128, h=2).to(DEVICE, torch.bfloat16)
    x = torch.randn(2, 256, 128, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    eager = model(x)
    (gx,) = torch.autograd.grad(eager.float().square().sum(), x)
    compiled = torch.compile(model, fullgraph=True)
    out = compiled(x)
    (cgx,) = torch.autograd.grad(out.float().square().sum(), x)
    assert_close("compiled", out, eager.detach(), 2e-2)
    assert_close("compiled dx", cgx, gx, 3e-2)


def _custom_op_call(q, k, v, causal=True):
    """fa_ck::fwd called by hand in flash layout (what torch.compile traces)."""
    return torch.ops.fa_ck.fwd(q, k, v, None, None, 0, 0, q.shape[-1] ** -0.5, causal, -1, 0 if causal else -1,
                               None, 0.0, 0.0, None, False, "triton")


def test_eager_calls_skip_the_custom_ops_and_match_them():
    """Plain eager tensors take ops._Eager (the custom ops' dispatch cost ~1.2 ms of host time
    per fwd+bwd on the H200); it must give what fa_ck::fwd / fa_ck::bwd give, bit for bit,
    lse gradient included, and lse alone must be trainable."""
    q, k, v = (rand(2, 20, 2, 16, dtype=torch.float32, device=DEVICE) for _ in range(3))
    out, lse = fa_ck.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)[:2]
    assert type(out.grad_fn).__name__ == "_EagerBackward"
    ref_out, ref_lse = _custom_op_call(q, k, v)
    assert "fa_ck_fwd" in ref_out.grad_fn.name()
    assert torch.equal(out, ref_out) and torch.equal(lse, ref_lse)
    do, w = torch.randn_like(out), torch.randn_like(lse)
    got = torch.autograd.grad((out * do).sum() + (lse * w).sum(), (q, k, v))
    want = torch.autograd.grad((ref_out * do).sum() + (ref_lse * w).sum(), (q, k, v))
    for name, g, r in zip("qkv", got, want):
        assert torch.equal(g, r), f"d{name}: eager path differs from the custom op"
    # only lse used: out's gradient arrives as None and counts as zeros
    got = torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)[1].sum(), (q, k, v))
    want = torch.autograd.grad(_custom_op_call(q, k, v)[1].sum(), (q, k, v))
    for name, g, r in zip("qkv", got, want):
        assert torch.equal(g, r), f"d{name} through lse alone"


def test_calls_without_a_graph_skip_autograd_function(monkeypatch):
    """Under no_grad, or with no input that requires grad, the forward runs without
    autograd.Function's machinery (host time) and gives the same out and lse."""
    from fa_ck import ops
    q, k, v = (rand(2, 20, 2, 16, dtype=torch.float32, device=DEVICE) for _ in range(3))
    want_out, want_lse = fa_ck.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)[:2]
    monkeypatch.setattr(ops._Eager, "apply", lambda *a: pytest.fail("autograd.Function used without a graph"))
    with torch.no_grad():
        out, lse = fa_ck.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)[:2]
    assert out.grad_fn is None and torch.equal(out, want_out) and torch.equal(lse, want_lse)
    out = fa_ck.flash_attn_func(q.detach(), k.detach(), v.detach(), causal=True)
    assert out.grad_fn is None and torch.equal(out, want_out)


def test_eager_path_refuses_double_backward():
    q, k, v = (rand(1, 8, 1, 16, dtype=torch.float32, device=DEVICE) for _ in range(3))
    (gq,) = torch.autograd.grad(fa_ck.flash_attn_func(q, k, v).sum(), q, create_graph=True)
    with pytest.raises(NotImplementedError, match="double backward"):    # no silent wrong 2nd derivative
        gq.sum().backward()


def test_custom_ops_pass_opcheck():
    q, k, v = (torch.randn(1, 12, 2, 16, device=DEVICE) for _ in range(3))
    args = (q, k, v, None, None, 0, 0, 0.25, True, -1, 0, None, 0.0, 0.0, None, False, "reference")
    torch.library.opcheck(torch.ops.fa_ck.fwd.default, args,
                          test_utils=("test_schema", "test_faketensor", "test_autograd_registration"))


# ------------------------------------------------------------------ edge cases

@pytest.mark.parametrize("sq,sk", [(0, 5), (5, 0), (0, 0)])
def test_zero_length(sq, sk):
    q = rand(2, 2, sq, 16, dtype=torch.float32, device=DEVICE)
    k, v = (rand(2, 2, sk, 16, dtype=torch.float32, device=DEVICE) for _ in range(2))
    out, lse = fa_ck.attention(q, k, v, causal=True, return_lse=True)
    assert out.shape == (2, 2, sq, 16) and (out == 0).all()
    assert (lse == float("-inf")).all()
    out.sum().backward()
    assert (k.grad == 0).all() and (q.grad == 0).all()


def test_fully_masked_rows_give_zero_and_no_nan():
    # Sq > Sk with causal: the first Sq - Sk query rows see no key.
    q = rand(1, 2, 30, 16, dtype=torch.float32, device=DEVICE)
    k, v = (rand(1, 2, 10, 16, dtype=torch.float32, device=DEVICE) for _ in range(2))
    out, lse = fa_ck.attention(q, k, v, causal=True, return_lse=True)
    assert (out[:, :, :20] == 0).all() and (lse[:, :, :20] == float("-inf")).all()
    assert torch.isfinite(out).all() and torch.isfinite(lse[:, :, 20:]).all()
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
    # a window that leaves whole rows empty behaves the same
    o2, l2 = fa_ck.attention(q, k, v, window_size=(0, 0), return_lse=True)
    assert torch.isfinite(o2).all() and (l2[:, :, :20] == float("-inf")).all()


def test_huge_logits_stay_finite():
    q, k, v = (rand(1, 2, 40, 32, dtype=torch.float32, device=DEVICE) for _ in range(3))
    out = fa_ck.attention(q, k, v, scale=1e3)
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), scale=1e3)
    assert torch.isfinite(out).all()
    # near one-hot rows: a tf32 dot on a GPU can move mass between near-tied keys
    assert_close("out", out, ref, 1e-4 if DEVICE == "cpu" else 2e-2)
    out.sum().backward()
    assert torch.isfinite(q.grad).all()


def test_nan_and_inf_propagate_to_the_rows_that_see_them():
    # Like SDPA's fused kernels (flash, cuDNN) and the reference: a NaN/inf reaches exactly the rows
    # that see it. (SDPA's math backend also spreads inf from masked-out keys: inf + -inf = NaN.)
    q, k, v = (torch.randn(1, 2, 12, 16, device=DEVICE) for _ in range(3))
    q[0, 0, 3, 5] = float("nan")
    k[0, 1, 7, 0] = float("inf")
    out = fa_ck.attention(q, k, v, causal=True)
    ref, _ = reference.attention(*(t.transpose(1, 2).double() for t in (q, k, v)), causal=True, dtype=torch.float64)
    assert torch.isnan(out[0, 0, 3]).all() and not torch.isnan(out[0, 0, :3]).any()
    assert not torch.isnan(out[0, 1, :7]).any()           # rows before key 7 never see it
    assert torch.equal(torch.isnan(out), torch.isnan(ref.transpose(1, 2)))


def test_non_contiguous_and_expanded_inputs():
    base = torch.randn(2, 40, 4, 64, device=DEVICE)
    q = base[:, ::2, :, :32].transpose(1, 2)                  # strided in seq and head_dim slice
    k = torch.randn(1, 4, 20, 32, device=DEVICE).expand(2, 4, 20, 32)   # stride 0 over batch
    v = torch.randn(2, 20, 4, 32, device=DEVICE).transpose(1, 2)
    vt = torch.randn(2, 4, 32, 20, device=DEVICE).transpose(-1, -2)     # last dim not contiguous
    for vv in (v, vt):
        out = fa_ck.attention(q, k, vv, causal=True)
        ref = F.scaled_dot_product_attention(q.double(), k.double(), vv.double(), is_causal=True)
        assert_close("out", out, ref, tol(FWD_TOL, torch.float32, DEVICE))


def test_output_dtype_follows_input():
    for dt in (torch.float16, torch.bfloat16):
        q, k, v = (torch.randn(1, 2, 9, 16, device=DEVICE, dtype=dt) for _ in range(3))
        assert fa_ck.attention(q, k, v).dtype == dt


# ------------------------------------------------------------------ validation

def _qkv(shape=(1, 2, 8, 16), **kw):
    return tuple(torch.randn(*shape, device=DEVICE, **kw) for _ in range(3))


@pytest.mark.parametrize("mutate,exc,match", [
    (lambda q, k, v: (q[0], k, v), ValueError, "q must be 4-D"),
    (lambda q, k, v: (q.half(), k, v), TypeError, "share a dtype"),
    (lambda q, k, v: (q.double(), k.double(), v.double()), TypeError, "q must be float16"),
    (lambda q, k, v: (q, k[:, :, :5], v), ValueError, "k and v must have the same shape"),
    (lambda q, k, v: (q[..., :8], k, v), ValueError, "head_dim"),
    (lambda q, k, v: (torch.randn(1, 3, 8, 16, device=DEVICE), k, v), ValueError, "multiple of heads"),
    (lambda q, k, v: (torch.randn(2, 2, 8, 16, device=DEVICE), k, v), ValueError, "batch"),
    (lambda q, k, v: (q.cpu() if DEVICE != "cpu" else q.to("meta"), k, v), ValueError, "one device"),
    (lambda q, k, v: ("q", k, v), TypeError, "q must be a torch.Tensor"),
])
def test_bad_tensors_name_the_argument(mutate, exc, match):
    with pytest.raises(exc, match=match):
        fa_ck.attention(*mutate(*_qkv()))


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"dropout_p": 1.0}, ValueError, "dropout_p"),
    ({"dropout_p": -0.1}, ValueError, "dropout_p"),
    ({"window_size": (-2, 0)}, ValueError, "window_size"),
    ({"window_size": 5}, TypeError, "window_size"),
    ({"softcap": -1.0}, ValueError, "softcap"),
    ({"scale": float("nan")}, ValueError, "scale"),
    ({"causal": 1}, TypeError, "causal"),
    ({"alibi_slopes": torch.ones(3)}, ValueError, "alibi_slopes"),
    ({"alibi_slopes": torch.ones(2, dtype=torch.float64)}, TypeError, "alibi_slopes"),
    ({"backend": "cuda"}, ValueError, "backend"),
])
def test_bad_options_name_the_argument(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        fa_ck.attention(*_qkv(), **kwargs)
    with pytest.raises(exc, match=match):                  # explain() checks exactly what attention() does
        fa_ck.explain(*_qkv(), **kwargs)


def test_flash_attn_errors_use_flash_attn_names():
    q, k, v = (t.transpose(1, 2) for t in _qkv())
    with pytest.raises(ValueError, match="softmax_scale"):
        fa_ck.flash_attn_func(q, k, v, softmax_scale=float("inf"))
    with pytest.raises(TypeError, match="softmax_scale"):
        fa_ck.flash_attn_func(q, k, v, softmax_scale="0.1")
    with pytest.raises(TypeError, match="unexpected keyword"):
        fa_ck.explain(*_qkv(), is_causal=True)


def test_more_sequences_than_the_grid_holds_is_refused_not_crashed():
    q = torch.randn(0, 2, 16, device=DEVICE)
    cu = torch.zeros(65537, dtype=torch.int32, device=DEVICE)             # 65536 empty sequences
    with pytest.raises(NotImplementedError, match="sequences 65536"):
        fa_ck.flash_attn_varlen_func(q, q, q, cu, cu, 0, 0, backend="triton")


@pytest.mark.parametrize("cu,maxlen,match", [
    (torch.tensor([0, 5, 12], dtype=torch.int64), 7, "int32"),
    (torch.tensor([1, 5, 12], dtype=torch.int32), 7, "start at 0"),
    (torch.tensor([0, 8, 5, 12], dtype=torch.int32), 7, "non-decreasing"),
    (torch.tensor([0, 5, 11], dtype=torch.int32), 7, "total"),
    (torch.tensor([0, 5, 12], dtype=torch.int32), 6, "max_seqlen_q"),
    (torch.tensor([[0, 5, 12]], dtype=torch.int32), 7, "1 dims"),
])
def test_bad_cu_seqlens(cu, maxlen, match):
    q, k, v = (torch.randn(12, 2, 16, device=DEVICE) for _ in range(3))
    good = torch.tensor([0, 5, 12], dtype=torch.int32, device=DEVICE)
    with pytest.raises((ValueError, TypeError), match=match):
        fa_ck.flash_attn_varlen_func(q, k, v, cu.to(DEVICE), good, maxlen, 7)


@pytest.mark.parametrize("backend", ["reference", "sdpa", "triton"])
def test_gradient_through_lse(backend):
    """lse returned by return_lse is differentiable: d lse / d S = P."""
    q, k, v = (rand(2, 4, 20, 16, dtype=torch.float32, device=DEVICE) for _ in range(3))
    out, lse = fa_ck.attention(q, k, v, causal=True, return_lse=True, backend=backend)
    w = torch.randn_like(lse)
    grads = torch.autograd.grad((lse * w).sum() + out.sum(), (q, k, v))
    q64, k64, v64 = (t.detach().transpose(1, 2).double().requires_grad_() for t in (q, k, v))
    ref, ref_lse = reference.attention(q64, k64, v64, causal=True, dtype=torch.float64)
    refs = torch.autograd.grad((ref_lse * w.double()).sum() + ref.sum(), (q64, k64, v64))
    for g, r in zip(grads, refs):
        assert_close("grad", g, r.transpose(1, 2), 1e-4 if DEVICE == "cpu" else 5e-3)


@pytest.mark.parametrize("window", [(2 ** 31 - 1, 2 ** 31 - 1), (10 ** 9, 0)])
def test_window_wider_than_the_sequence_is_no_window(window):
    q, k, v = (rand(1, 2, 30, 16, dtype=torch.float32, device=DEVICE) for _ in range(3))
    out = fa_ck.attention(q, k, v, window_size=window)
    ref = fa_ck.attention(q, k, v, causal=window[1] == 0, backend="reference")
    assert_close("out", out, ref, 1e-5 if DEVICE == "cpu" else 5e-3)


def test_autocast_runs_float32_in_the_autocast_dtype():
    q, k, v = (torch.randn(1, 2, 16, 16, device=DEVICE) for _ in range(3))
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        out = fa_ck.attention(q, k, v, causal=True)
        sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.dtype == sdpa.dtype == torch.bfloat16
