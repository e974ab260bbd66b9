"""Comparing fa_ck against reference.py in float64, element by element."""
import functools
import math

import torch

import fa_ck
from fa_ck import reference

# ||out - ref|| / ||ref|| bounds. Interpreter fp32 is exact fp32; on a GPU fp32 means tf32.
FWD_TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
GRAD_TOL = {torch.float32: 2e-5, torch.float16: 5e-3, torch.bfloat16: 3e-2}
GPU_FP32_TOL = 5e-3


def rel_err(got, ref):
    """||got - ref|| / ||ref||; the denominator is floored at sqrt(numel) (elements of size 1)
    so that a gradient that is exactly zero in exact arithmetic (one key: dq = 0) is judged
    by its absolute error instead of dividing rounding noise by zero."""
    got, ref = got.double(), ref.double()
    floor = max(ref.numel(), 1) ** 0.5
    denom = floor if ref.norm() < 1e-3 * floor else ref.norm()
    return ((got - ref).norm() / denom).item()


def tol(table, dtype, device):
    if dtype == torch.float32 and torch.device(device).type == "cuda":
        return GPU_FP32_TOL
    return table[dtype]


def assert_close(name, got, ref, bound):
    assert got.shape == ref.shape, f"{name}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    finite = torch.isfinite(ref)
    assert torch.isfinite(got[finite]).all(), f"{name}: NaN/inf where the reference is finite (unwritten?)"
    assert torch.equal(torch.isinf(got) & (got < 0), torch.isinf(ref) & (ref < 0)), f"{name}: -inf pattern differs"
    err = rel_err(torch.where(finite, got.double(), 0.0), torch.where(finite, ref.double(), 0.0))
    assert err <= bound, f"{name}: relative error {err:.3g} > {bound:.3g}"
    return err


GUARD = 4096


def rand(*shape, dtype, device, requires_grad=True):
    """Random normal values inside a NaN-filled allocation: a kernel that reads past either end
    of the tensor pulls NaN into its result, which assert_close reports."""
    n = 1
    for x in shape:
        n *= x
    buf = torch.full((n + 2 * GUARD,), float("nan"), dtype=dtype, device=device)
    t = buf[GUARD:GUARD + n].view(shape)
    t.copy_(torch.randn(*shape, dtype=dtype, device=device))
    return t.requires_grad_(requires_grad)


def _ref_kw(feat):
    return dict(scale=feat.get("softmax_scale"), causal=feat.get("causal", False),
                window=feat.get("window_size", (-1, -1)), alibi_slopes=feat.get("alibi_slopes"),
                softcap=feat.get("softcap", 0.0), dropout_p=feat.get("dropout_p", 0.0))


def _compare(out, lse, ref, ref_lse, inputs, ref_inputs, dtype, device, grads, same_precision=None):
    """same_precision: None (fixed bounds only), or a pair of functions of do, each giving the
    three gradients of another reference; a gradient past its fixed bound still passes when
    - its error is at most twice that of the reference computed in the input dtype (flash-attn's
      test criterion: half precision cannot do better when dS cancels), recorded under
      errs["same_precision"]; or
    - it is within the fixed bound of the float64 reference whose delta = rowsum(dO * O) is
      taken from the output as stored (FlashAttention-2's algorithm; where dS cancels to ~0,
      e.g. rows that see one key, the output's rounding is all that is left), recorded under
      errs["fa2_delta"]."""
    errs = {"out": assert_close("out", out, ref, tol(FWD_TOL, dtype, device)),
            "lse": assert_close("lse", lse, ref_lse, tol(FWD_TOL, dtype, device) * 10)}
    if grads:
        do = torch.randn_like(out)
        got = torch.autograd.grad(out, inputs, do)
        refs = torch.autograd.grad(ref, ref_inputs, do.double())
        others = None
        for i, (name, g, r) in enumerate(zip(("dq", "dk", "dv"), got, refs)):
            bound = tol(GRAD_TOL, dtype, device)
            try:
                errs[name] = assert_close(name, g, r, bound)
            except AssertionError as e:
                if same_precision is None or dtype == torch.float32 or not torch.isfinite(g).all():
                    raise
                others = others if others is not None else [f(do) for f in same_precision]
                err, base_err, fa2_err = rel_err(g, r), rel_err(others[0][i], r), rel_err(g, others[1][i])
                if err <= 2 * base_err:
                    errs.setdefault("same_precision", {})[name] = base_err
                elif fa2_err <= bound:
                    errs.setdefault("fa2_delta", {})[name] = fa2_err
                else:
                    raise AssertionError(f"{e}, > 2x the error of the reference in {dtype} ({base_err:.3g}), and "
                                         f"{fa2_err:.3g} from the reference with delta from the stored output") from None
                errs[name] = err
    return errs


def _same_precision(ref_fn, inputs):
    """The gradients of ref_fn (the reference) evaluated in the inputs' own dtype."""
    def grads(do):
        low = [t.detach().clone().requires_grad_() for t in inputs]
        out, _ = ref_fn(*low, dtype=low[0].dtype)
        return torch.autograd.grad(out, low, do)
    return grads


def _fa2_delta(ref_fn, inputs64, out):
    """The float64 gradients of ref_fn with FlashAttention-2's delta: rowsum(dO * O) over the
    output as stored (out, rounded to its dtype) instead of the exact one. That changes dS by
    -P * shift per row (shift = rowsum(dO * (out - O))), which is the gradient of
    -shift * exp(lse - lse.detach()) (d lse / dS = P)."""
    def grads(do):
        leaves = [t.detach().clone().requires_grad_() for t in inputs64]
        ref, lse = ref_fn(*leaves, dtype=torch.float64)
        do = do.double()
        shift = (do * (out.detach().double() - ref.detach())).sum(-1).transpose(-1, -2)  # lse's shape
        seen = torch.isfinite(lse)                                # rows that see no key: no dS
        lse = torch.where(seen, lse, 0.0)
        extra = (torch.where(seen, shift, 0.0) * torch.exp(lse - lse.detach())).sum()
        return torch.autograd.grad((ref * do).sum() - extra, leaves)
    return grads


def check(b, sq, sk, hq, hkv, d, *, dtype=torch.float32, device="cpu", backend="triton", grads=True,
          same_precision=False, **feat):
    """Run fa_ck.flash_attn_func (flash layout) and compare out, lse and dq, dk, dv with the float64
    reference on fresh random inputs. With dropout the reference applies the mask the kernel
    reports (return_attn_probs: negative entries were dropped). same_precision: see _compare."""
    q = rand(b, sq, hq, d, dtype=dtype, device=device)
    k = rand(b, sk, hkv, d, dtype=dtype, device=device)
    v = rand(b, sk, hkv, d, dtype=dtype, device=device)
    out, lse, probs = fa_ck.flash_attn_func(q, k, v, backend=backend, return_attn_probs=True, **feat)
    keep = probs >= 0 if feat.get("dropout_p", 0.0) > 0 else None
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref_fn = functools.partial(reference.attention, dropout_mask=keep, **_ref_kw(feat))
    ref, ref_lse = ref_fn(q64, k64, v64, dtype=torch.float64)
    others = (_same_precision(ref_fn, (q, k, v)), _fa2_delta(ref_fn, (q64, k64, v64), out)) if same_precision else None
    return _compare(out, lse, ref, ref_lse, (q, k, v), (q64, k64, v64), dtype, device, grads, others)


def check_varlen(lens_q, lens_k, hq, hkv, d, *, dtype=torch.float32, device="cpu", backend="triton",
                 grads=True, same_precision=False, **feat):
    """The same for flash_attn_varlen_func on packed sequences of the given lengths."""
    cu_q = torch.tensor([0] + list(torch.tensor(lens_q).cumsum(0)), dtype=torch.int32, device=device)
    cu_k = torch.tensor([0] + list(torch.tensor(lens_k).cumsum(0)), dtype=torch.int32, device=device)
    q = rand(sum(lens_q), hq, d, dtype=dtype, device=device)
    k = rand(sum(lens_k), hkv, d, dtype=dtype, device=device)
    v = rand(sum(lens_k), hkv, d, dtype=dtype, device=device)
    out, lse, probs = fa_ck.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), backend=backend,
                                                   return_attn_probs=True, **feat)
    masks = None
    if feat.get("dropout_p", 0.0) > 0:       # probs: (B, H, max_q, max_k), sequence i in its top-left corner
        masks = [probs[i:i + 1, :, :sq, :sk] >= 0 for i, (sq, sk) in enumerate(zip(lens_q, lens_k))]
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref_fn = functools.partial(reference.attention_varlen, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, dropout_mask=masks,
                               **_ref_kw(feat))
    ref, ref_lse = ref_fn(q64, k64, v64, dtype=torch.float64)
    others = (_same_precision(ref_fn, (q, k, v)), _fa2_delta(ref_fn, (q64, k64, v64), out)) if same_precision else None
    return _compare(out, lse, ref, ref_lse, (q, k, v), (q64, k64, v64), dtype, device, grads, others)


def alibi(b, h, per_batch=False, device="cpu"):
    shape = (b, h) if per_batch else (h,)
    return (torch.rand(shape, device=device) * 0.5 + 0.05).float()


def default_scale(d):
    return 1.0 / math.sqrt(d)


def count_calls(monkeypatch, owner, name: str) -> list:
    """Wrap owner.name so each call appends its (args, kwargs) to the returned list (tests that
    must prove a call went to a given kernel launcher, and with what)."""
    calls = []
    real = getattr(owner, name)

    def counting(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)
    monkeypatch.setattr(owner, name, counting)
    return calls


def record_launches(monkeypatch, owner, kernel) -> list:
    """Wrap owner.launch so each launch of `kernel` appends its (grid, constexprs) to the returned
    list (tests that must prove a switch reached the kernel, not only its configuration)."""
    launches = []
    real = owner.launch

    def recording(k, grid, args, constexprs):
        if k is kernel:
            launches.append((grid, constexprs))
        return real(k, grid, args, constexprs)
    monkeypatch.setattr(owner, "launch", recording)
    return launches
