"""The specification: attention in plain PyTorch. Every backend is tested against this.

Layout is flash-attn's: q (B, Sq, Hq, D), k and v (B, Sk, Hkv, D). Computation is in
float32 by default (pass dtype=torch.float64 in tests), output in `out_dtype` (q's dtype
by default).

    S = scale * q k^T                           (per head; q head h reads kv head h // (Hq // Hkv))
    S = softcap * tanh(S / softcap)             if softcap > 0
    S = S - slope_h * |i + Sk - Sq - j|         if alibi_slopes is given
    S = -inf where key j is outside the window  i + Sk - Sq - left <= j <= i + Sk - Sq + right
                                                (causal means right = 0: bottom-right aligned)
    P = softmax(S) over j;  lse = logsumexp(S)  (a row that sees no key: P = 0, lse = -inf)
    O = (P * keep / (1 - p)) V                  with `dropout_mask` (keep: bool) when dropout_p > 0

This module imports nothing else from fa_ck.
"""
from __future__ import annotations

import math
from typing import Optional

import torch


def visible(sq: int, sk: int, causal: bool = False, window: tuple[int, int] = (-1, -1),
            device=None) -> torch.Tensor:
    """Bool (sq, sk): may query i attend to key j (bottom-right aligned)."""
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    i = torch.arange(sq, device=device).view(-1, 1) + (sk - sq)
    j = torch.arange(sk, device=device).view(1, -1)
    ok = torch.ones(sq, sk, dtype=torch.bool, device=device)
    if left >= 0:
        ok &= j >= i - left
    if right >= 0:
        ok &= j <= i + right
    return ok


def alibi_bias(slopes: torch.Tensor, sq: int, sk: int, dtype=torch.float32) -> torch.Tensor:
    """-slope_h * |i + Sk - Sq - j|: (1, H, sq, sk) for slopes (H,), (B, H, sq, sk) for (B, H)."""
    slopes = slopes.to(dtype)
    slopes = slopes.view(1, -1, 1, 1) if slopes.dim() == 1 else slopes.view(slopes.shape[0], -1, 1, 1)
    i = torch.arange(sq, device=slopes.device).view(-1, 1) + (sk - sq)
    j = torch.arange(sk, device=slopes.device).view(1, -1)
    return -slopes * (i - j).abs().to(dtype)


def scores(q, k, *, scale=None, causal=False, window=(-1, -1), alibi_slopes=None, softcap=0.0,
           dtype=torch.float32):
    """Scores S (B, Hq, Sq, Sk) as above: -inf where the key is outside the window."""
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    if hq % hkv:
        raise ValueError(f"Hq={hq} is not a multiple of Hkv={hkv}")
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    qf = q.to(dtype).transpose(1, 2)                                        # (B, Hq, Sq, D)
    kf = k.to(dtype).transpose(1, 2).repeat_interleave(hq // hkv, dim=1)    # (B, Hq, Sk, D)
    s = scale * (qf @ kf.transpose(-1, -2))
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    if alibi_slopes is not None:
        s = s + alibi_bias(alibi_slopes.to(q.device), sq, sk, dtype)
    return s.masked_fill(~visible(sq, sk, causal, window, q.device), float("-inf"))


def probabilities(q, k, *, scale=None, causal=False, window=(-1, -1), alibi_slopes=None, softcap=0.0,
                  dtype=torch.float32):
    """Softmax probabilities P (B, Hq, Sq, Sk) and lse (B, Hq, Sq), before dropout."""
    s = scores(q, k, scale=scale, causal=causal, window=window, alibi_slopes=alibi_slopes, softcap=softcap,
               dtype=dtype)
    lse = torch.logsumexp(s, dim=-1)                                        # -inf for an empty row
    p = torch.exp(s - torch.where(lse == float("-inf"), 0.0, lse).unsqueeze(-1))  # empty row: exp(-inf) = 0
    return p, lse


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: Optional[float] = None,
              causal: bool = False, window: tuple[int, int] = (-1, -1),
              alibi_slopes: Optional[torch.Tensor] = None, softcap: float = 0.0,
              dropout_p: float = 0.0, dropout_mask: Optional[torch.Tensor] = None,
              dtype: torch.dtype = torch.float32, out_dtype: Optional[torch.dtype] = None):
    """Returns (out (B, Sq, Hq, D), lse (B, Hq, Sq) float32-or-`dtype`)."""
    b, sq, hq, d = q.shape
    hkv = k.shape[2]
    out_dtype = q.dtype if out_dtype is None else out_dtype
    p, lse = probabilities(q, k, scale=scale, causal=causal, window=window, alibi_slopes=alibi_slopes,
                           softcap=softcap, dtype=dtype)
    if dropout_p > 0:
        if dropout_mask is None:
            raise ValueError("the reference needs dropout_mask (bool, (B, Hq, Sq, Sk)) when dropout_p > 0")
        p = p * dropout_mask.to(dtype) / (1.0 - dropout_p)
    vf = v.to(dtype).transpose(1, 2).repeat_interleave(hq // hkv, dim=1)
    out = (p @ vf).transpose(1, 2).to(out_dtype)
    return out, lse


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, *, dropout_mask=None, **kw):
    """Packed sequences: q (total_q, Hq, D), k/v (total_k, Hkv, D). Returns out (total_q, Hq, D),
    lse (Hq, total_q). dropout_mask, if given, is a list of per-sequence (1, Hq, sq_i, sk_i) masks."""
    outs, lses = [], []
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    slopes = kw.pop("alibi_slopes", None)
    for b in range(len(cq) - 1):
        s = None if slopes is None else (slopes if slopes.dim() == 1 else slopes[b])
        m = None if dropout_mask is None else dropout_mask[b]
        o, l = attention(q[None, cq[b]:cq[b + 1]], k[None, ck[b]:ck[b + 1]], v[None, ck[b]:ck[b + 1]],
                         alibi_slopes=s, dropout_mask=m, **kw)
        outs.append(o[0])
        lses.append(l[0])
    return torch.cat(outs, 0), torch.cat(lses, -1)
