"""The sdpa backend: PyTorch's F.scaled_dot_product_attention, for calls it can express.

SDPA returns no lse, so lse is computed beside it in query chunks (float32). Its backward
recomputes the forward under autograd. Never chosen by `auto`; ask for it by name.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import reference
from ..params import AttnParams

NAME = "sdpa"
_CHUNK = 1024


def available() -> tuple[bool, str]:
    return True, f"torch {torch.__version__} scaled_dot_product_attention (only when asked for by name)"


def unsupported(q, k, v, p: AttnParams) -> str | None:
    if p.varlen:
        return "varlen"
    if p.softcap > 0:
        return "softcap"
    if p.dropout_p > 0:
        return "dropout (its backward could not regenerate SDPA's mask)"
    if p.fp8:
        return "fp8"
    if p.window_left >= 0 or (p.window_right >= 0 and not p.causal):
        return "sliding window"
    if p.causal and q.shape[1] > k.shape[1]:
        return "causal with seqlen_q > seqlen_k (rows that see no key give NaN in SDPA)"
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return f"dtype {q.dtype}"
    return None


def _mask(q, k, p: AttnParams):
    """(attn_mask, is_causal) in SDPA's terms, with bottom-right causal and ALiBi made explicit."""
    sq, sk = q.shape[1], k.shape[1]
    if p.alibi_slopes is None:
        if not p.causal:
            return None, False
        if sq == sk:
            return None, True
        return reference.visible(sq, sk, causal=True, device=q.device), False
    bias = reference.alibi_bias(p.alibi_slopes, sq, sk)
    if p.causal:
        bias = bias.masked_fill(~reference.visible(sq, sk, causal=True, device=q.device), float("-inf"))
    return bias.to(q.dtype), False


def _sdpa(q, k, v, p: AttnParams):
    mask, is_causal = _mask(q, k, p)
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         attn_mask=mask, is_causal=is_causal, scale=p.scale,
                                         enable_gqa=q.shape[2] != k.shape[2])
    return out.transpose(1, 2)


def _lse(q, k, p: AttnParams):
    b, sq, hq, d = q.shape
    hkv = k.shape[2]
    mask, is_causal = _mask(q, k, p)
    if is_causal:
        mask = reference.visible(sq, sq, causal=True, device=q.device)
    kf = k.float().permute(0, 2, 3, 1).unsqueeze(2)                 # (B, Hkv, 1, D, Sk)
    lse = torch.empty(b, hq, sq, dtype=torch.float32, device=q.device)
    for s0 in range(0, sq, _CHUNK):
        qf = q[:, s0:s0 + _CHUNK].float().permute(0, 2, 1, 3)       # (B, Hq, c, D)
        s = (qf.reshape(b, hkv, hq // hkv, -1, d) @ kf).reshape(b, hq, -1, k.shape[1]) * p.scale
        if mask is not None:
            m = mask[..., s0:s0 + _CHUNK, :]
            s = s.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else s + m.float()
        lse[:, :, s0:s0 + _CHUNK] = torch.logsumexp(s, dim=-1)
    return lse


def forward(q, k, v, p: AttnParams):
    return _sdpa(q, k, v, p).contiguous(), _lse(q, k, p)


def backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    # torch.func.vjp, not autograd.grad: inside a custom op autograd is not recording.
    if dlse is None:
        _, vjp = torch.func.vjp(lambda q_, k_, v_: _sdpa(q_, k_, v_, p), q, k, v)
        return vjp(do.to(q.dtype))
    _, vjp = torch.func.vjp(lambda q_, k_, v_: (_sdpa(q_, k_, v_, p), _lse(q_, k_, p)), q, k, v)
    return vjp((do.to(q.dtype), dlse.float()))
