"""Forward and backward as torch.library custom ops, with fake kernels and autograd, and a lean
eager path beside them.

torch.compile sees two opaque ops (fa_ck::fwd, fa_ck::bwd) whose output shapes the fake
kernels give, so a model calling fa_ck traces with no graph break. The backend is chosen
before the op runs (dispatch.choose) and passed in by name, so backward uses the same one.

Eager calls on plain tensors skip the custom ops: an autograd.Function calls the same
_forward/_grads straight: the ops' Python dispatch (argument defaults, pytree, the generated
autograd node) costs several times SDPA's whole call in host time, which leaves the GPU idle at
short sequences (docs/performance.md, Kernel choices).

fp8: fwd's trailing arguments (defaults: off) are the fp8 switch, the descales of fp8 inputs and
their output dtype. Its backward is the regular (bf16/fp16/fp32) backward over the saved
high-precision q, k, v, using the fp8 forward's out and lse; fp8 inputs have no backward.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import torch
from torch import Tensor

from . import dispatch
from .params import FP8_DTYPES as _FP8_DTYPES, AttnParams


def _params(scale, causal, window_left, window_right, alibi_slopes, softcap, dropout_p, rng,
            deterministic, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, fp8=False,
            q_descale=None, k_descale=None, v_descale=None, out_dtype=None) -> AttnParams:
    return AttnParams(scale=scale, causal=causal, window_left=window_left, window_right=window_right,
                      alibi_slopes=alibi_slopes, softcap=softcap, dropout_p=dropout_p, rng=rng,
                      deterministic=deterministic, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                      max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, fp8=fp8, q_descale=q_descale,
                      k_descale=k_descale, v_descale=v_descale, out_dtype=out_dtype)


def _lse_shape(q: Tensor, varlen: bool):
    return (q.shape[1], q.shape[0]) if varlen else (q.shape[0], q.shape[2], q.shape[1])


def _out_dtype(q: Tensor, out_dtype: Optional[torch.dtype]) -> torch.dtype:
    """fp8 inputs give out_dtype (bfloat16 by default); other inputs their own dtype."""
    return (out_dtype or torch.bfloat16) if q.dtype in _FP8_DTYPES else q.dtype


@torch.library.custom_op("fa_ck::fwd", mutates_args=())
def fwd(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Optional[Tensor], cu_seqlens_k: Optional[Tensor],
        max_seqlen_q: int, max_seqlen_k: int, scale: float, causal: bool, window_left: int, window_right: int,
        alibi_slopes: Optional[Tensor], softcap: float, dropout_p: float, rng: Optional[Tensor],
        deterministic: bool, backend: str, fp8: bool = False, q_descale: Optional[Tensor] = None,
        k_descale: Optional[Tensor] = None, v_descale: Optional[Tensor] = None,
        out_dtype: Optional[torch.dtype] = None) -> tuple[Tensor, Tensor]:
    # `deterministic` only shapes the backward; it is an input here so autograd can save it.
    p = _params(scale, causal, window_left, window_right, alibi_slopes, softcap, dropout_p, rng, deterministic,
                cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, fp8, q_descale, k_descale, v_descale,
                out_dtype)
    return _forward(q, k, v, p, backend)


def _forward(q, k, v, p: AttnParams, backend: str):
    if q.numel() == 0 or k.numel() == 0:
        # Nothing to attend to: a row that sees no key gives 0 and lse -inf.
        return (torch.zeros(q.shape, dtype=_out_dtype(q, p.out_dtype), device=q.device),
                torch.full(_lse_shape(q, p.varlen), float("-inf"), dtype=torch.float32, device=q.device))
    return dispatch.module(backend).forward(q, k, v, p)


@fwd.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, causal, window_left,
      window_right, alibi_slopes, softcap, dropout_p, rng, deterministic, backend, fp8=False, q_descale=None,
      k_descale=None, v_descale=None, out_dtype=None):
    lse = q.new_empty(_lse_shape(q, cu_seqlens_q is not None), dtype=torch.float32)
    return q.new_empty(q.shape, dtype=_out_dtype(q, out_dtype)), lse


@torch.library.custom_op("fa_ck::bwd", mutates_args=())
def bwd(do: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, dlse: Optional[Tensor],
        cu_seqlens_q: Optional[Tensor], cu_seqlens_k: Optional[Tensor], max_seqlen_q: int, max_seqlen_k: int,
        scale: float, causal: bool, window_left: int, window_right: int, alibi_slopes: Optional[Tensor],
        softcap: float, dropout_p: float, rng: Optional[Tensor], deterministic: bool,
        backend: str) -> tuple[Tensor, Tensor, Tensor]:
    p = _params(scale, causal, window_left, window_right, alibi_slopes, softcap, dropout_p, rng,
                deterministic, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)
    return _grads(do, q, k, v, out, lse, dlse, p, backend)


def _grads(do, q, k, v, out, lse, dlse, p: AttnParams, backend: str):
    if q.numel() == 0 or k.numel() == 0:
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    dq, dk, dv = dispatch.module(backend).backward(do, q, k, v, out, lse, p, dlse=dlse)
    return dq.contiguous(), dk.contiguous(), dv.contiguous()


@bwd.register_fake
def _(do, q, k, v, out, lse, dlse, *args):
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape))


DOUBLE_BACKWARD = ("fa_ck: double backward is not supported: fa_ck's backward has no backward of its own, so a "
                   "gradient of its gradients (autograd.grad(..., create_graph=True), then a backward through "
                   "them) cannot be computed; use F.scaled_dot_product_attention's math backend for that")


def _no_double_backward(ctx, *grads):
    raise NotImplementedError(DOUBLE_BACKWARD)


# Reached only when a second backward flows into fa_ck::bwd's outputs; never silently zero.
bwd.register_autograd(_no_double_backward, setup_context=lambda ctx, inputs, output: None)


class _NoDoubleBackward(torch.autograd.Function):
    """Passes the eager backward's dq, dk, dv through, tied to everything they depend on: a second
    backward that reaches them raises instead of dropping fa_ck's part of the gradient."""

    @staticmethod
    def forward(ctx, n: int, *tensors):
        return tensors[:n]

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError(DOUBLE_BACKWARD)


def _setup_context(ctx, inputs, output):
    q, k, v, *rest = inputs
    (ctx.cu_q, ctx.cu_k, ctx.max_q, ctx.max_k, ctx.scale, ctx.causal, ctx.wl, ctx.wr, ctx.alibi,
     ctx.softcap, ctx.dropout_p, ctx.rng, ctx.deterministic, ctx.backend) = rest[:14]
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)


def _trainable(q):
    if q.dtype in _FP8_DTYPES:
        raise NotImplementedError("fa_ck fp8: no backward through fp8 q, k, v; to train, pass bfloat16 or "
                                  "float16 tensors with fp8=True (their gradients come from the regular backward)")


def _backward(ctx, dout, dlse):
    q, k, v, out, lse = ctx.saved_tensors
    _trainable(q)
    # fp8 or not, the regular backward kernels over the high-precision inputs, with this forward's lse.
    # dlse: the gradient reaching lse (return_lse=True), None when lse was not used
    dq, dk, dv = bwd(dout, q, k, v, out, lse, dlse, ctx.cu_q, ctx.cu_k, ctx.max_q, ctx.max_k, ctx.scale,
                     ctx.causal, ctx.wl, ctx.wr, ctx.alibi, ctx.softcap, ctx.dropout_p, ctx.rng,
                     ctx.deterministic, ctx.backend)
    return (dq, dk, dv) + (None,) * 19


fwd.register_autograd(_backward, setup_context=_setup_context)


class _Eager(torch.autograd.Function):
    """The eager path: what fa_ck::fwd and its autograd do, without the custom ops' dispatch."""

    @staticmethod
    def forward(ctx, q, k, v, p: AttnParams, backend: str):
        out, lse = _forward(q, k, v, p, backend)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.p, ctx.backend = p, backend
        ctx.set_materialize_grads(False)      # an unused lse gets no gradient (None), not zeros
        return out, lse

    @staticmethod
    def backward(ctx, dout, dlse):
        q, k, v, out, lse = ctx.saved_tensors
        _trainable(q)
        # fp8 or not, the regular backward kernels over the high-precision inputs (as fa_ck::bwd)
        p = ctx.p
        if p.fp8:
            p = dataclasses.replace(p, fp8=False, q_descale=None, k_descale=None, v_descale=None, out_dtype=None)
        if dout is None:                      # only lse was used
            dout = torch.zeros_like(out)
        with torch.no_grad():                 # the kernels' host code must record no graph of its own
            grads = _grads(dout, q, k, v, out, lse, dlse, p, ctx.backend)
        if torch.is_grad_enabled():           # create_graph=True: this backward is being recorded
            deps = [t for t in (dout, dlse, q, k, v, out, lse) if t is not None and t.requires_grad]
            if deps:
                grads = _NoDoubleBackward.apply(3, *grads, *deps)
        return (*grads, None, None)


def _eager(q: Tensor) -> bool:
    """Plain tensors outside torch.compile/export and functorch transforms take the lean path;
    fake, meta and other subclassed tensors the custom ops (their fake kernels)."""
    return (type(q) in (torch.Tensor, torch.nn.Parameter) and q.device.type != "meta"
            and not torch.compiler.is_compiling() and not torch._C._are_functorch_transforms_active())


def attention(q, k, v, p: AttnParams, backend: str | None = "auto"):
    """-> (out, lse, backend name). Layout as in backends/__init__.py."""
    name, _ = dispatch.choose(q, k, v, p, backend)
    if _eager(q):
        if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
            out, lse = _Eager.apply(q, k, v, p, name)
        else:                                 # no graph to record: skip autograd.Function's machinery
            out, lse = _forward(q, k, v, p, name)
        return out, lse, name
    out, lse = fwd(q, k, v, p.cu_seqlens_q, p.cu_seqlens_k, p.max_seqlen_q, p.max_seqlen_k, p.scale,
                   p.causal, p.window_left, p.window_right, p.alibi_slopes, p.softcap, p.dropout_p,
                   p.rng, p.deterministic, name, p.fp8, p.q_descale, p.k_descale, p.v_descale, p.out_dtype)
    return out, lse, name
