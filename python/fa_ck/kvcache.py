"""flash_attn_with_kvcache: attention against a KV cache, dense or paged, with flash-attn 2.8's call.

    out = fa_ck.flash_attn_with_kvcache(q, k_cache, v_cache, k, v, cache_seqlens=lens, causal=True)

Every check runs first, and every error names the argument at fault. Then one custom op,
fa_ck::fwd_kvcache, rotates q and the new keys (rotary_cos/rotary_sin) and appends the new keys and
values to the cache in place (the chosen backend's kvcache_append: one fused kernel in triton's, CK's
appendkv kernel in ck's; else reference.kvcache_append's torch ops), then runs the backend's
kvcache_forward over the updated cache (backends/__init__.py states that contract).
torch.compile sees that one op, which mutates k_cache and v_cache, and its fake kernel: a decode step
traces with no graph break. Eager calls on plain tensors run the same code without the op's dispatch.

The checks of tensor values (cache_seqlens, cache_leftpad, cache_batch_idx, the block_table entries the
call reaches, the rotary table's length) read those values on the host: free for CPU tensors, one
device-to-host copy per call on a GPU (after a few small reductions of the block table). They are
skipped inside torch.compile and CUDA graph capture, which cannot read values, and when
FA_CK_KVCACHE_CHECKS=0; a bad value then fails in torch's indexing (a device-side assert on a GPU),
or triton's fused append drops the write that falls outside the cache, but CK's appendkv kernel (the
ck backend) has no bound and writes it outside the cache row or page, as flash-attn's kernels do.
Shape, dtype and device checks always run.
"""
from __future__ import annotations

import math
import operator
import os
from typing import Optional

import torch
from torch import Tensor

from . import checks, dispatch, reference
from .params import KVCacheParams

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_CACHE_LAYOUT = ("(batch_cache, seqlen_cache, heads_k, head_dim), or (num_blocks, page_size, heads_k, head_dim) "
                 "with block_table")


# ---------------------------------------------------------------- argument checks

def _check_layout(q, k_cache, v_cache, k, v, block_table) -> tuple[int, int]:
    """Shapes, dtypes and devices of the tensors; returns (capacity of a cache row, new tokens)."""
    checks.tensor("q", q)
    if q.dim() != 4:
        raise ValueError(f"q must be 4-D (batch, seqlen, heads, head_dim), got shape {tuple(q.shape)}")
    if q.dtype not in _DTYPES:
        raise TypeError(f"q must be float16, bfloat16 or float32, got {q.dtype}")
    b, _, hq, d = q.shape
    if d < 1:
        raise ValueError("head_dim must be at least 1")
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        checks.tensor(name, t, device=q.device)
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-D {_CACHE_LAYOUT}, got shape {tuple(t.shape)}")
        if t.dtype != q.dtype:
            raise TypeError(f"{name} must have q's dtype ({q.dtype}), got {t.dtype}")
        if t.stride(-1) != 1 and t.shape[-1] > 1:
            raise ValueError(f"{name} must have a contiguous last dim (it is written in place, so fa_ck cannot "
                             f"copy it), got strides {t.stride()}")
    if v_cache.shape != k_cache.shape:
        raise ValueError(f"k_cache and v_cache must have the same shape, got {tuple(k_cache.shape)} and "
                         f"{tuple(v_cache.shape)}")
    hkv = k_cache.shape[2]
    if k_cache.shape[3] != d:
        raise ValueError(f"head_dim of q ({d}) and k_cache ({k_cache.shape[3]}) must match")
    if (hkv == 0 and hq != 0) or (hkv != 0 and hq % hkv):
        raise ValueError(f"heads of q ({hq}) must be a multiple of heads of k_cache and v_cache ({hkv}) (GQA/MQA)")
    if (k is None) != (v is None):
        raise ValueError("k and v go together: " + ("k was given without v" if v is None else "v was given without k"))
    n_new = 0
    if k is not None:
        want = f"(batch, seqlen_new, heads_k, head_dim) = ({b}, seqlen_new, {hkv}, {d})"
        for name, t in (("k", k), ("v", v)):
            checks.tensor(name, t, device=q.device)
            if t.dim() != 4 or t.shape[0] != b or t.shape[2:] != k_cache.shape[2:]:
                raise ValueError(f"{name} must be {want}, got shape {tuple(t.shape)}")
            if t.dtype != q.dtype:
                raise TypeError(f"{name} must have q's dtype ({q.dtype}), got {t.dtype}")
        if v.shape != k.shape:
            raise ValueError(f"k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
        n_new = k.shape[1]
    if block_table is None:
        return k_cache.shape[1], n_new
    checks.tensor("block_table", block_table, rank=2, dtype=torch.int32, device=q.device)
    if block_table.shape[0] != b:
        raise ValueError(f"block_table must be (batch, max_blocks) with q's batch ({b}), "
                         f"got {tuple(block_table.shape)}")
    return block_table.shape[1] * k_cache.shape[1], n_new


def _check_index(name: str, t, batch: int, device):
    if t is None:
        return None
    checks.tensor(name, t, rank=1, dtype=torch.int32, device=device)
    if t.shape[0] != batch:
        raise ValueError(f"{name} must have shape ({batch},) (q's batch), got {tuple(t.shape)}")
    return t


def _check_lengths(q, k_cache, cache_seqlens, cache_batch_idx, cache_leftpad, block_table, n_new: int,
                   capacity: int):
    """cache_seqlens as an int or a (B,) int32 tensor; the indexing arguments' shapes."""
    b = q.shape[0]
    _check_index("cache_batch_idx", cache_batch_idx, b, q.device)
    _check_index("cache_leftpad", cache_leftpad, b, q.device)
    if block_table is not None and cache_batch_idx is not None:
        raise ValueError("cache_batch_idx cannot be used with block_table: a paged cache's rows are block_table's")
    if block_table is None and cache_batch_idx is None and k_cache.shape[0] < b:
        raise ValueError(f"k_cache holds {k_cache.shape[0]} rows, fewer than q's batch ({b}); "
                         f"cache_batch_idx picks other rows")
    if cache_seqlens is None:
        if n_new:
            raise ValueError("cache_seqlens is needed with k and v: it says where in the cache they go")
        return capacity                 # flash-attn's meaning: every row is full
    if isinstance(cache_seqlens, torch.Tensor):
        return _check_index("cache_seqlens", cache_seqlens, b, q.device)
    n = checks.integer(cache_seqlens)
    if n is None:
        raise TypeError(f"cache_seqlens must be an int or a ({b},) int32 tensor, got {type(cache_seqlens).__name__}")
    if n < 0 or n + n_new > capacity:
        raise ValueError(f"cache_seqlens ({n}) plus the {n_new} new tokens of k must fit the cache's capacity "
                         f"({capacity} per row), and cache_seqlens must be >= 0")
    return n


def _check_rotary(q, k, rotary_cos, rotary_sin, rotary_interleaved):
    checks.boolean("rotary_interleaved", rotary_interleaved)
    if rotary_cos is None and rotary_sin is None:
        return
    if rotary_cos is None or rotary_sin is None:
        raise ValueError("rotary_cos and rotary_sin go together: "
                         + ("rotary_sin" if rotary_cos is None else "rotary_cos") + " was given alone")
    if k is None:
        raise ValueError("rotary_cos/rotary_sin rotate q and the new keys: they need k and v (flash-attn's rule)")
    for name, t in (("rotary_cos", rotary_cos), ("rotary_sin", rotary_sin)):
        checks.tensor(name, t, rank=2, device=q.device)
        if not t.dtype.is_floating_point:
            raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}")
    if rotary_sin.shape != rotary_cos.shape:
        raise ValueError(f"rotary_cos and rotary_sin must have the same shape, got {tuple(rotary_cos.shape)} and "
                         f"{tuple(rotary_sin.shape)}")
    if not 1 <= rotary_cos.shape[1] <= q.shape[-1] // 2:
        raise ValueError(f"rotary_cos must be (seqlen_ro, rotary_dim / 2) with 2 <= rotary_dim <= head_dim "
                         f"({q.shape[-1]}), got shape {tuple(rotary_cos.shape)}")


# ---------------------------------------------------------------- value checks (one host read)

def _reads_values(q) -> bool:
    """Whether the value checks run: never inside torch.compile or CUDA graph capture, nor on fake or
    meta tensors (no values to read), nor with FA_CK_KVCACHE_CHECKS=0."""
    if torch.compiler.is_compiling() or type(q) not in (torch.Tensor, torch.nn.Parameter):
        return False
    if q.device.type == "meta" or os.environ.get("FA_CK_KVCACHE_CHECKS", "1") == "0":
        return False
    return not (q.device.type == "cuda" and torch.cuda.is_current_stream_capturing())


def _bad_pages(block_table, lens, n_new: int, leftpad, page: int, num_blocks: int) -> Tensor:
    """Bool (B, max_blocks): entries the call reads or writes (pages of keys leftpad .. lens + n_new)
    that name no block. Entries past those may hold anything."""
    j = torch.arange(block_table.shape[1], device=block_table.device)
    end = lens + n_new
    pages = ((end.view(-1, 1) if isinstance(end, Tensor) else end) + page - 1) // page
    reached = j < pages
    if leftpad is not None:
        reached = reached & (j >= (leftpad // page).view(-1, 1))
    return reached & ((block_table < 0) | (block_table >= num_blocks))


def _check_values(q, k_cache, lens, n_new: int, capacity: int, batch_idx, leftpad, block_table, rotary_len,
                  span: int):
    """Raise a ValueError naming the argument whose values the call cannot take. lens: cache_seqlens (an int
    or a (B,) tensor); span: positions past cache_seqlens the rotary table must hold (0 without rotary)."""
    if not _reads_values(q):
        return
    b = q.shape[0]
    named = [(n, t) for n, t in (("cache_seqlens", lens), ("cache_leftpad", leftpad), ("cache_batch_idx", batch_idx))
             if isinstance(t, Tensor)]
    bad = None
    parts = [t for _, t in named]
    if block_table is not None:
        bad = _bad_pages(block_table, lens, n_new, leftpad, k_cache.shape[1], k_cache.shape[0])
        parts.append(bad.sum().to(torch.int32).view(1))
    if not parts:
        values = {}
        n_bad = 0
    else:
        host = torch.cat(parts).tolist()                  # the one read of the device
        values = {n: host[i * b:(i + 1) * b] for i, (n, _) in enumerate(named)}
        n_bad = host[-1] if bad is not None else 0
    seq = values.get("cache_seqlens", [lens] * b)
    for i, n in enumerate(seq):
        if n < 0 or n + n_new > capacity:
            raise ValueError(f"cache_seqlens[{i}] = {n}: it must be >= 0, and with the {n_new} new tokens of k "
                             f"fit the cache's capacity ({capacity} per row)")
        if span and n + span > rotary_len:
            raise ValueError(f"rotary_cos/rotary_sin have {rotary_len} positions; batch row {i} needs positions "
                             f"up to {n + span - 1} (cache_seqlens[{i}] = {n})")
    for i, lp in enumerate(values.get("cache_leftpad", [])):
        if not 0 <= lp <= seq[i]:
            raise ValueError(f"cache_leftpad[{i}] = {lp} must be in [0, cache_seqlens[{i}] = {seq[i]}]")
    for i, row in enumerate(values.get("cache_batch_idx", [])):
        if not 0 <= row < k_cache.shape[0]:
            raise ValueError(f"cache_batch_idx[{i}] = {row} names no row of k_cache ({k_cache.shape[0]} rows)")
    if n_bad:
        row, col = bad.nonzero()[0].tolist()
        raise ValueError(f"block_table[{row}, {col}] = {int(block_table[row, col])} names no block of k_cache "
                         f"({k_cache.shape[0]} blocks), and batch row {row} reads or writes that page")


# ---------------------------------------------------------------- the op

def _step(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens, interleaved: bool,
          q_per_position: bool, p: KVCacheParams, backend: str):
    """Rotary and the append in place (the backend's kvcache_append, else torch ops), then the backend
    over the updated cache."""
    mod = dispatch.module(backend)
    if k is not None:
        if hasattr(mod, "kvcache_append"):
            q = mod.kvcache_append(q, k_cache, v_cache, k, v, cache_seqlens, rotary_cos, rotary_sin, interleaved,
                                   q_per_position, p)
        else:
            q = reference.kvcache_append(q, k_cache, v_cache, k, v, cache_seqlens, rotary_cos, rotary_sin,
                                         interleaved=interleaved, q_per_position=q_per_position,
                                         batch_idx=p.batch_idx, block_table=p.block_table)
    b, sq, hq, _ = q.shape
    if q.numel() == 0 or k_cache.numel() == 0 or (p.block_table is not None and p.block_table.shape[1] == 0):
        # no query, or no key anywhere: a row that sees no key gives 0 and lse -inf
        return q.new_zeros(q.shape), torch.full((b, hq, sq), float("-inf"), dtype=torch.float32, device=q.device)
    return mod.kvcache_forward(q, k_cache, v_cache, p)


@torch.library.custom_op("fa_ck::fwd_kvcache", mutates_args=("k_cache", "v_cache"))
def fwd_kvcache(q: Tensor, k_cache: Tensor, v_cache: Tensor, k: Optional[Tensor], v: Optional[Tensor],
                rotary_cos: Optional[Tensor], rotary_sin: Optional[Tensor], cache_seqlens: Tensor, seqlens_k: Tensor,
                cache_batch_idx: Optional[Tensor], cache_leftpad: Optional[Tensor], block_table: Optional[Tensor],
                alibi_slopes: Optional[Tensor], scale: float, causal: bool, window_left: int, window_right: int,
                softcap: float, rotary_interleaved: bool, rotary_q_per_position: bool, num_splits: int,
                backend: str) -> tuple[Tensor, Tensor]:
    p = KVCacheParams(scale=scale, seqlens_k=seqlens_k, causal=causal, window_left=window_left,
                      window_right=window_right, alibi_slopes=alibi_slopes, softcap=softcap, leftpad=cache_leftpad,
                      batch_idx=cache_batch_idx, block_table=block_table, num_splits=num_splits)
    return _step(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens, rotary_interleaved,
                 rotary_q_per_position, p, backend)


@fwd_kvcache.register_fake
def _(q, k_cache, v_cache, *args):
    b, sq, hq, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((b, hq, sq), dtype=torch.float32)


def _plain(q) -> bool:
    """Plain tensors outside torch.compile and functorch transforms skip the op's dispatch."""
    return (type(q) in (torch.Tensor, torch.nn.Parameter) and q.device.type != "meta"
            and not torch.compiler.is_compiling() and not torch._C._are_functorch_transforms_active())


# ---------------------------------------------------------------- the calls

def _prepare(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens, cache_batch_idx, cache_leftpad,
             block_table, softmax_scale, causal, window_size, softcap, rotary_interleaved, alibi_slopes, num_splits,
             backend):
    """Every check; returns (q, the op's arguments after q as a tuple, KVCacheParams)."""
    capacity, n_new = _check_layout(q, k_cache, v_cache, k, v, block_table)
    lens = _check_lengths(q, k_cache, cache_seqlens, cache_batch_idx, cache_leftpad, block_table, n_new, capacity)
    _check_rotary(q, k, rotary_cos, rotary_sin, rotary_interleaved)
    b, sq, hq, d = q.shape
    checks.boolean("causal", causal)
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else checks.real("softmax_scale", softmax_scale)
    softcap = checks.real("softcap", softcap, 0.0)
    left, right = checks.window(window_size)
    if checks.integer(num_splits) is None or num_splits < 0:
        raise (TypeError if checks.integer(num_splits) is None else ValueError)(
            f"num_splits must be an int >= 0 (0: the backend chooses), got {num_splits!r}")
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a str, got {type(backend).__name__}")
    dispatch.requested(backend)         # a ValueError naming the choices
    alibi = checks.alibi(alibi_slopes, b, hq, q.device)
    # flash-attn rotates q per position when causal or local, local meaning a bound under the capacity
    q_per_position = causal or 0 <= left < capacity or 0 <= right < capacity
    if causal:
        right = 0                       # causal is the window's right edge at the diagonal
    # bounds that hide nothing become -1: left past every key, right past every query
    left, right = (-1 if left >= capacity else left), (-1 if right >= sq else right)
    span = 0 if rotary_cos is None else max(n_new, sq if q_per_position else 1)
    _check_values(q, k_cache, lens, n_new, capacity, cache_batch_idx, cache_leftpad, block_table,
                  0 if rotary_cos is None else rotary_cos.shape[0], span)
    if isinstance(lens, Tensor):
        seqlens_k = lens + n_new if n_new else lens
    else:
        seqlens_k = torch.full((b,), lens + n_new, dtype=torch.int32, device=q.device)
        lens = torch.full((b,), lens, dtype=torch.int32, device=q.device) if n_new else seqlens_k
    p = KVCacheParams(scale=scale, seqlens_k=seqlens_k, causal=causal, window_left=left, window_right=right,
                      alibi_slopes=alibi, softcap=softcap, leftpad=cache_leftpad, batch_idx=cache_batch_idx,
                      block_table=block_table, num_splits=operator.index(num_splits))
    q = q if q.stride(-1) == 1 or d == 1 else q.contiguous()
    return q, (k_cache, v_cache, k, v, rotary_cos, rotary_sin, lens, rotary_interleaved, q_per_position), p


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False,
                            *, backend="auto"):
    """flash-attn 2.8's flash_attn_with_kvcache: decoding against a KV cache, dense or paged.

    q (B, Sq, Hq, D). k_cache, v_cache: dense (B_cache, S_cache, Hkv, D), batch row b reading row
    cache_batch_idx[b] (default b); or paged (num_blocks, page_size, Hkv, D) with block_table
    (B, max_blocks) int32, key j of row b in block block_table[b, j // page_size] at j % page_size.
    Any page size is taken (the GPU backends say in explain_kvcache() which they serve).
    cache_seqlens: int or (B,) int32, the keys each row holds BEFORE this call (None: the whole cache).
    k, v (B, Sk_new, Hkv, D), optional: written into the caches IN PLACE at cache_seqlens[b] ..
    cache_seqlens[b] + Sk_new - 1, then attended to. cache_leftpad (B,) int32: row b's keys start at
    cache_leftpad[b] (positions stay absolute). rotary_cos, rotary_sin (seqlen_ro, rotary_dim / 2), with k:
    the new keys are rotated at positions cache_seqlens[b] + t; q at cache_seqlens[b] + i when causal or
    local (a window bound under the cache's capacity), else all of q at cache_seqlens[b]; rotary_interleaved
    pairs dims (0, 1), (2, 3), ... else (i, i + rotary_dim / 2); dims past rotary_dim are left alone.
    causal and window_size are aligned bottom-right on each row's keys; softcap, alibi_slopes (Hq,) or
    (B, Hq) float32, softmax_scale (default 1/sqrt(D)) as in flash_attn_func. num_splits: key splits
    (0: the backend chooses). No backward.

    Returns out (B, Sq, Hq, D), or (out, softmax_lse (B, Hq, Sq) float32) with return_softmax_lse; a
    query that sees no key gives 0 and lse -inf. Values of the index tensors are checked with one
    host read per call on a GPU (module docstring: when it is skipped).
    """
    checks.boolean("return_softmax_lse", return_softmax_lse)
    q, args, p = _prepare(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens, cache_batch_idx,
                          cache_leftpad, block_table, softmax_scale, causal, window_size, softcap, rotary_interleaved,
                          alibi_slopes, num_splits, backend)
    name, _ = dispatch.choose_kvcache(q, k_cache, v_cache, p, backend)
    if _plain(q):
        with torch.no_grad():
            out, lse = _step(q, *args, p, name)
    else:
        kc, vc, kn, vn, cos, sin, lens, interleaved, per_position = args
        out, lse = fwd_kvcache(q, kc, vc, kn, vn, cos, sin, lens, p.seqlens_k, p.batch_idx, p.leftpad,
                               p.block_table, p.alibi_slopes, p.scale, p.causal, p.window_left, p.window_right,
                               p.softcap, interleaved, per_position, p.num_splits, name)
    return (out, lse) if return_softmax_lse else out


def explain_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None, cache_seqlens=None,
                    cache_batch_idx=None, cache_leftpad=None, block_table=None, softmax_scale=None, causal=False,
                    window_size=(-1, -1), softcap=0.0, rotary_interleaved=True, alibi_slopes=None, num_splits=0,
                    return_softmax_lse=False, *, backend="auto") -> str:
    """Which backend would serve flash_attn_with_kvcache with the same arguments, and why. Runs the same
    checks, and writes nothing."""
    checks.boolean("return_softmax_lse", return_softmax_lse)
    q, args, p = _prepare(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens, cache_batch_idx,
                          cache_leftpad, block_table, softmax_scale, causal, window_size, softcap, rotary_interleaved,
                          alibi_slopes, num_splits, backend)
    layout = f"paged, page_size {k_cache.shape[1]}" if p.paged else "dense"
    extra = [f"{0 if k is None else k.shape[1]} new tokens"] + (["rotary"] if rotary_cos is not None else [])
    head = (f"q {tuple(q.shape)} k_cache {tuple(k_cache.shape)} ({layout}) {q.dtype} on {q.device}; "
            f"features: {', '.join(p.features() + extra)}; backend={dispatch.requested(backend)!r}")
    return dispatch.explanation(head, lambda: dispatch.choose_kvcache(q, k_cache, v_cache, p, backend))
