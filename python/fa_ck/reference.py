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

KV-cache decoding (flash_attn_with_kvcache) is the same math over each batch row's keys in a cache:
attention_kvcache over the cache as it stands, flash_attn_with_kvcache the whole call (rotary, the
append, attention) on copies of the caches.

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


def raw_scores(q, k, scale=None, softcap=0.0, dtype=torch.float32):
    """scale * q k^T (B, Hq, Sq, Sk), q head h reading kv head h // (Hq // Hkv), softcapped if softcap > 0:
    before any bias or mask."""
    hq, d, hkv = q.shape[2], q.shape[3], k.shape[2]
    if hq % hkv:
        raise ValueError(f"Hq={hq} is not a multiple of Hkv={hkv}")
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    qf = q.to(dtype).transpose(1, 2)                                        # (B, Hq, Sq, D)
    kf = k.to(dtype).transpose(1, 2).repeat_interleave(hq // hkv, dim=1)    # (B, Hq, Sk, D)
    s = scale * (qf @ kf.transpose(-1, -2))
    return softcap * torch.tanh(s / softcap) if softcap > 0 else s


def scores(q, k, *, scale=None, causal=False, window=(-1, -1), alibi_slopes=None, softcap=0.0,
           dtype=torch.float32):
    """Scores S (B, Hq, Sq, Sk) as above: -inf where the key is outside the window."""
    sq, sk = q.shape[1], k.shape[1]
    s = raw_scores(q, k, scale, softcap, dtype)
    if alibi_slopes is not None:
        s = s + alibi_bias(alibi_slopes.to(q.device), sq, sk, dtype)
    return s.masked_fill(~visible(sq, sk, causal, window, q.device), float("-inf"))


def probabilities(q, k, *, scale=None, causal=False, window=(-1, -1), alibi_slopes=None, softcap=0.0,
                  dtype=torch.float32):
    """Softmax probabilities P (B, Hq, Sq, Sk) and lse (B, Hq, Sq), before dropout."""
    s = scores(q, k, scale=scale, causal=causal, window=window, alibi_slopes=alibi_slopes, softcap=softcap,
               dtype=dtype)
    return softmax(s)


def softmax(s):
    """P = softmax(s) over the last dim and lse = logsumexp(s); a row of -inf gives P = 0, lse = -inf."""
    lse = torch.logsumexp(s, dim=-1)
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
        o, lse = attention(q[None, cq[b]:cq[b + 1]], k[None, ck[b]:ck[b + 1]], v[None, ck[b]:ck[b + 1]],
                           alibi_slopes=s, dropout_mask=m, **kw)
        outs.append(o[0])
        lses.append(lse[0])
    return torch.cat(outs, 0), torch.cat(lses, -1)


# ---------------------------------------------------------------- KV cache (flash_attn_with_kvcache)

def rotary(x, cos, sin, positions, *, interleaved=False, dtype=torch.float32):
    """Rotary embedding of x (B, S, H, D) at integer positions (B, S), rows of cos and sin (seqlen_ro, R/2).

    The first R = 2 * cos.shape[1] dims turn in pairs, (2t, 2t+1) when interleaved (GPT-J), else (t, t + R/2)
    (GPT-NeoX): (a, b) -> (a cos - b sin, a sin + b cos) with column t of the position's row. Dims past R
    are unchanged. Computed in `dtype`, returned in x's dtype (what a cache of that dtype stores)."""
    half = cos.shape[1]
    c = cos.to(dtype)[positions.long()].unsqueeze(2)                        # (B, S, 1, R/2)
    s = sin.to(dtype)[positions.long()].unsqueeze(2)
    xr = x[..., :2 * half].to(dtype)
    a, b = (xr[..., 0::2], xr[..., 1::2]) if interleaved else (xr[..., :half], xr[..., half:])
    a, b = a * c - b * s, a * s + b * c
    turned = torch.stack((a, b), -1).flatten(-2) if interleaved else torch.cat((a, b), -1)
    return torch.cat((turned.to(x.dtype), x[..., 2 * half:]), -1)


def kvcache_rows(cache, batch: int, batch_idx=None, block_table=None):
    """The cache as one dense row per batch row, (B, S, Hkv, D): S = S_cache for a dense cache (row
    batch_idx[b], or b), max_blocks * page_size for a paged one (row b is its pages block_table[b] in order)."""
    if block_table is None:
        rows = torch.arange(batch, device=cache.device) if batch_idx is None else batch_idx.long()
        return cache[rows]
    if cache.shape[0] == 0:
        return cache.new_zeros((batch, block_table.shape[1] * cache.shape[1]) + tuple(cache.shape[2:]))
    # entries past a row's keys are never read and may hold anything: clamped to stay in range
    return cache[block_table.long().clamp(0, cache.shape[0] - 1)].flatten(1, 2)


def kvcache_visible(seqlens_k, seqlen_q: int, seqlen_cache: int, leftpad=None, causal=False, window=(-1, -1)):
    """(visible (B, Sq, S) bool, distance (B, Sq, S)) for keys j of each cache row: row b's keys are
    leftpad[b] <= j < seqlens_k[b]; query i sits at key position seqlens_k[b] - Sq + i (bottom-right), and
    distance = that position - j. Key j is visible when -right <= distance <= left (causal: right = 0)."""
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    end = seqlens_k.long().view(-1, 1, 1)
    start = torch.zeros_like(end) if leftpad is None else leftpad.long().view(-1, 1, 1)
    j = torch.arange(seqlen_cache, device=end.device).view(1, 1, -1)
    i = torch.arange(seqlen_q, device=end.device).view(1, -1, 1)
    dist = (end - seqlen_q + i) - j
    ok = (j >= start) & (j < end)
    if left >= 0:
        ok = ok & (dist <= left)
    if right >= 0:
        ok = ok & (dist >= -right)
    return ok, dist


def attention_kvcache(q, k_cache, v_cache, seqlens_k, *, leftpad=None, batch_idx=None, block_table=None,
                      scale: Optional[float] = None, causal: bool = False, window: tuple[int, int] = (-1, -1),
                      alibi_slopes: Optional[torch.Tensor] = None, softcap: float = 0.0,
                      dtype: torch.dtype = torch.float32, out_dtype: Optional[torch.dtype] = None):
    """Attention of q (B, Sq, Hq, D) over a KV cache as it stands (the new keys already in it), as above
    with the ALiBi bias -slope * |distance|. Cache layouts as in kvcache_rows, seqlens_k and leftpad
    (B,) integers (kvcache_visible). Returns (out (B, Sq, Hq, D), lse (B, Hq, Sq)) as attention()."""
    b, sq, hq, d = q.shape
    k, v = kvcache_rows(k_cache, b, batch_idx, block_table), kvcache_rows(v_cache, b, batch_idx, block_table)
    hkv = k.shape[2]
    ok, dist = kvcache_visible(seqlens_k, sq, k.shape[1], leftpad, causal, window)
    s = raw_scores(q, k, scale, softcap, dtype)
    if alibi_slopes is not None:
        slopes = alibi_slopes.to(q.device, dtype)
        slopes = slopes.view(1, -1, 1, 1) if slopes.dim() == 1 else slopes.view(b, -1, 1, 1)
        s = s - slopes * dist.abs().to(dtype).unsqueeze(1)
    p, lse = softmax(s.masked_fill(~ok.unsqueeze(1), float("-inf")))
    # entries outside a row's keys may hold anything, NaN included: they weigh 0 and must add 0
    vf = torch.where(ok.any(1)[:, :, None, None], v.to(dtype), 0.0)
    vf = vf.transpose(1, 2).repeat_interleave(hq // hkv, dim=1)
    return (p @ vf).transpose(1, 2).to(q.dtype if out_dtype is None else out_dtype), lse


def kvcache_append(q, k_cache, v_cache, k, v, cache_seqlens, rotary_cos=None, rotary_sin=None, *, interleaved=True,
                   q_per_position=False, batch_idx=None, block_table=None, dtype=torch.float32):
    """The append of a decoding call, in place: the new keys k (B, n, Hkv, D), rotated with a rotary table,
    and values v go to positions cache_seqlens[b] + t of batch row b's cache row (batch_idx[b], or b) or
    pages (block_table[b]). Returns q rotated at cache_seqlens[b] + i (q_per_position) or cache_seqlens[b]
    with a rotary table, else q as given."""
    lens = cache_seqlens.long().view(-1, 1)
    pos = lens + torch.arange(k.shape[1], device=q.device)
    if rotary_cos is not None:
        i = torch.arange(q.shape[1], device=q.device) * int(q_per_position)
        q = rotary(q, rotary_cos, rotary_sin, lens + i, interleaved=interleaved, dtype=dtype)
        k = rotary(k, rotary_cos, rotary_sin, pos, interleaved=interleaved, dtype=dtype)
    if k.shape[1]:
        if block_table is None:
            rows = torch.arange(k.shape[0], device=q.device) if batch_idx is None else batch_idx.long()
            where = (rows.view(-1, 1).expand_as(pos), pos)
        else:
            page = k_cache.shape[1]
            where = (block_table.long().gather(1, pos // page), pos % page)
        k_cache.index_put_(where, k.to(k_cache.dtype))
        v_cache.index_put_(where, v.to(v_cache.dtype))
    return q


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, *, dtype=torch.float32, out_dtype=None):
    """The whole decoding call, on copies: (out, lse, k_cache, v_cache after the append).

    cache_seqlens: an int or (B,) integers, the keys of each row before the append (leftpad included);
    None: the cache's whole capacity (and no k, v). The new keys k (B, Sk_new, Hkv, D), rotated, and
    values v go to positions cache_seqlens[b] + t of row b; attention is then attention_kvcache with
    seqlens_k = cache_seqlens + Sk_new. Rotary (with k): key t at position cache_seqlens[b] + t; query i
    at cache_seqlens[b] + i when causal or windowed, else at cache_seqlens[b] (all of q at one position).
    Windowed means a bound of window_size in [0, capacity) (flash-attn's rule: bounds past the capacity
    count as -1)."""
    b, sq = q.shape[:2]
    page = k_cache.shape[1]
    capacity = page if block_table is None else block_table.shape[1] * page
    n = 0 if k is None else k.shape[1]
    cs = torch.as_tensor(capacity if cache_seqlens is None else cache_seqlens, device=q.device)
    cs = cs.long().expand(b)
    k_cache, v_cache = k_cache.clone(), v_cache.clone()
    if k is not None:
        windowed = any(0 <= int(w) < capacity for w in window_size)
        q = kvcache_append(q, k_cache, v_cache, k, v, cs, rotary_cos, rotary_sin, interleaved=rotary_interleaved,
                           q_per_position=causal or windowed, batch_idx=cache_batch_idx, block_table=block_table,
                           dtype=dtype)
    out, lse = attention_kvcache(q, k_cache, v_cache, cs + n, leftpad=cache_leftpad, batch_idx=cache_batch_idx,
                                 block_table=block_table, scale=softmax_scale, causal=causal,
                                 window=tuple(int(w) for w in window_size), alibi_slopes=alibi_slopes,
                                 softcap=softcap, dtype=dtype, out_dtype=out_dtype)
    return out, lse, k_cache, v_cache
