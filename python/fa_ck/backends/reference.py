"""The reference backend: reference.py's math, run as a backend (the CPU fallback).

It materialises the (Sq, Sk) score matrix, so it is for small work; its backward
recomputes the forward under autograd. Its dropout mask comes from torch's Philox-free
CPU/GPU generator seeded by the call's rng, so its bits differ from the triton kernels'.
"""
from __future__ import annotations

import warnings

import torch

from .. import reference
from ..params import AttnParams, KVCacheParams

NAME = "reference"
_LARGE = 1 << 27          # score elements past which we warn once
_warned = False


def available() -> tuple[bool, str]:
    return True, "plain PyTorch: materialises scores, for small work and as the oracle"


def _warn_large(elements: int, what: str):
    global _warned
    if not _warned and elements > _LARGE:
        _warned = True
        warnings.warn(f"fa_ck: the reference backend materialises {what} scores; "
                      "install triton and use a GPU for large calls", stacklevel=5)


def unsupported(q, k, v, p: AttnParams) -> str | None:
    if p.fp8:
        return "fp8"
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return f"dtype {q.dtype}"
    return None


def dropout_mask(rng, batch, heads, seqlen_q, seqlen_k, dropout_p):
    gen = torch.Generator(device=rng.device)
    gen.manual_seed(int(rng[0].item()) ^ (int(rng[1].item()) << 20))
    return torch.rand((batch, heads, seqlen_q, seqlen_k), generator=gen, device=rng.device) >= dropout_p


def _run(q, k, v, p: AttnParams):
    kw = dict(scale=p.scale, window=(p.window_left, p.window_right), softcap=p.softcap,
              dropout_p=p.dropout_p, alibi_slopes=p.alibi_slopes)
    if p.varlen:
        cq, ck = p.cu_seqlens_q.tolist(), p.cu_seqlens_k.tolist()
        masks = None
        if p.dropout_p > 0:
            full = dropout_mask(p.rng, len(cq) - 1, q.shape[1], p.max_seqlen_q, p.max_seqlen_k, p.dropout_p)
            masks = [full[b:b + 1, :, :cq[b + 1] - cq[b], :ck[b + 1] - ck[b]] for b in range(len(cq) - 1)]
        return reference.attention_varlen(q, k, v, p.cu_seqlens_q, p.cu_seqlens_k, dropout_mask=masks, **kw)
    b, sq, hq, _ = q.shape
    sk = k.shape[1]
    _warn_large(b * hq * sq * sk, f"{b}x{hq}x{sq}x{sk}")
    mask = dropout_mask(p.rng, b, hq, sq, sk, p.dropout_p) if p.dropout_p > 0 else None
    return reference.attention(q, k, v, dropout_mask=mask, **kw)


def forward(q, k, v, p: AttnParams):
    out, lse = _run(q, k, v, p)
    return out.contiguous(), lse.float().contiguous()


def backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    # torch.func.vjp, not autograd.grad: inside a custom op autograd is not recording.
    (o, lse_), vjp = torch.func.vjp(lambda q_, k_, v_: _run(q_, k_, v_, p), q, k, v)
    return vjp((do.to(o.dtype), torch.zeros_like(lse_) if dlse is None else dlse.to(lse_.dtype)))


def kvcache_unsupported(q, k_cache, v_cache, p: KVCacheParams) -> str | None:
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return f"dtype {q.dtype}"
    return None


def kvcache_forward(q, k_cache, v_cache, p: KVCacheParams):
    """reference.attention_kvcache in float32 over the whole capacity of each row; no host sync."""
    b, sq, hq, _ = q.shape
    s = k_cache.shape[1] * (1 if p.block_table is None else p.block_table.shape[1])
    _warn_large(b * hq * sq * s, f"{b}x{hq}x{sq}x{s}")
    out, lse = reference.attention_kvcache(
        q, k_cache, v_cache, p.seqlens_k, leftpad=p.leftpad, batch_idx=p.batch_idx, block_table=p.block_table,
        scale=p.scale, causal=p.causal, window=(p.window_left, p.window_right), alibi_slopes=p.alibi_slopes,
        softcap=p.softcap)
    return out.contiguous(), lse.float().contiguous()
