"""The public calls: argument checking, layouts and defaults, then one call into ops.

Every check runs before any kernel, and every error names the argument at fault.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F

from . import checks, dispatch, ops, reference
from .params import FP8_DTYPES as _FP8_DTYPES, AttnParams

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


# ---------------------------------------------------------------- checks

def _check_qkv(q, k, v, rank: int, layout: str, dtypes=_DTYPES):
    """layout names the dims, e.g. '(batch, seqlen, heads, head_dim)': it says where heads are."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        checks.tensor(name, t)
        if t.dim() != rank:
            raise ValueError(f"{name} must be {rank}-D {layout}, got shape {tuple(t.shape)}")
        if t.dtype not in dtypes:
            names = ("float16, bfloat16 or float32" if dtypes == _DTYPES
                     else "float8_e4m3fn or float8_e4m3fnuz (all three alike)")
            if dtypes == _DTYPES and t.dtype.is_floating_point and t.dtype.itemsize == 1:
                names += (" (fp8 tensors go to flash_attn_fp8_func, as float8_e4m3fn or float8_e4m3fnuz with "
                          "their descales)")
            raise TypeError(f"{name} must be {names}, got {t.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k and v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k and v must be on one device, got {q.device}, {k.device}, {v.device}")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"head_dim of q ({q.shape[-1]}) and k ({k.shape[-1]}) must match")
    if q.shape[-1] < 1:
        raise ValueError("head_dim must be at least 1")
    axis = layout.strip("()").split(", ").index("heads")
    hq, hkv = q.shape[axis], k.shape[axis]
    if (hkv == 0 and hq != 0) or (hkv != 0 and hq % hkv):    # 0 heads everywhere: an empty result, as SDPA
        raise ValueError(f"heads of q ({hq}) must be a multiple of heads of k and v ({hkv}) (GQA/MQA)")


def _last_dim_contiguous(t):
    return t if t.stride(-1) == 1 or t.shape[-1] == 1 else t.contiguous()


def _check_cu_seqlens(name, cu, total: int, device, max_seqlen, max_name) -> int:
    checks.tensor(name, cu, rank=1)
    if cu.dtype != torch.int32:
        raise TypeError(f"{name} must be int32, got {cu.dtype}")
    if cu.device != device:
        raise ValueError(f"{name} must be on {device} like q, got {cu.device}")
    if cu.numel() < 2:
        raise ValueError(f"{name} must hold batch + 1 >= 2 offsets, got {cu.numel()}")
    if isinstance(max_seqlen, bool) or not isinstance(max_seqlen, int) or max_seqlen < 0:
        raise TypeError(f"{max_name} must be a non-negative int, got {max_seqlen!r}")
    # value checks read the device; skip inside a compiled graph and on meta tensors (no values)
    if not torch.compiler.is_compiling() and cu.device.type != "meta":
        vals = cu.tolist()
        if vals[0] != 0:
            raise ValueError(f"{name} must start at 0, got {vals[0]}")
        lens = [b - a for a, b in zip(vals, vals[1:])]
        if min(lens) < 0:
            raise ValueError(f"{name} must be non-decreasing, got {vals}")
        if vals[-1] != total:
            raise ValueError(f"{name}[-1] must equal the total number of tokens ({total}), got {vals[-1]}")
        if max(lens) > max_seqlen:
            raise ValueError(f"{max_name}={max_seqlen} is smaller than the longest sequence in {name} ({max(lens)})")
    return cu.numel() - 1


def _params(q, k, *, batch, causal, scale, window_size, alibi_slopes, softcap, dropout_p, deterministic, fp8,
            seqlens=None, scale_name="softmax_scale", draw_rng=True):
    """seqlens: (longest q sequence, longest k sequence); default q's and k's dim 1 (batch layout).
    scale_name: what the caller calls the scale (attention: scale; flash-attn's: softmax_scale).
    draw_rng=False (explain): no dropout seed is drawn, so the caller's RNG stream is untouched."""
    checks.boolean("causal", causal)
    checks.boolean("deterministic", deterministic)
    head_dim = q.shape[-1]
    scale = 1.0 / math.sqrt(head_dim) if scale is None else checks.real(scale_name, scale)
    left, right = checks.window(window_size)
    if causal:
        right = 0 if right < 0 else min(right, 0)   # causal is the window's right edge at the diagonal
    sq, sk = seqlens if seqlens is not None else (q.shape[1], k.shape[1])
    # A window that reaches past every key is no window: -1 keeps the kernels' int32 index
    # arithmetic in range (a left edge >= sk or a right edge >= sq hides nothing).
    if left >= sk:
        left = -1
    if right >= sq:
        right = -1
    softcap = checks.real("softcap", softcap, 0.0)
    dropout_p = checks.real("dropout_p", dropout_p, 0.0, 1.0, hi_open=True)
    rng = None
    if dropout_p > 0 and draw_rng:
        # seed material drawn from the device's generator: torch.manual_seed makes it reproducible
        # 62 random bits (kernels add the head index: two calls' streams overlap with odds ~2^-50),
        # offset 0
        rng = torch.cat([torch.randint(0, 2 ** 62, (1,), dtype=torch.int64, device=q.device),
                         torch.zeros(1, dtype=torch.int64, device=q.device)])
    return AttnParams(scale=scale, causal=causal, window_left=left, window_right=right,
                      alibi_slopes=checks.alibi(alibi_slopes, batch, q.shape[-2], q.device),  # q is (.., heads, D) here
                      softcap=softcap, dropout_p=dropout_p, rng=rng, deterministic=deterministic, fp8=bool(fp8))


def _check_backend(backend):
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a str, got {type(backend).__name__}")
    dispatch.requested(backend)     # raises ValueError naming the choices


def _check_batched(q, k, v, layout: str, backend, dtypes=_DTYPES):
    """The checks every (batch, ...) entry point makes: tensors, batch agreement, backend name."""
    _check_qkv(q, k, v, 4, layout, dtypes)
    if q.shape[0] != k.shape[0]:
        raise ValueError(f"batch of q ({q.shape[0]}) and k ({k.shape[0]}) must match")
    _check_backend(backend)


# ---------------------------------------------------------------- calls

def _run(q, k, v, p: AttnParams, backend: str):
    # meta and other devices without autocast: no region to follow
    if (q.dtype == torch.float32 and torch.amp.is_autocast_available(q.device.type)
            and torch.is_autocast_enabled(q.device.type)):
        # like SDPA: inside an autocast region float32 attention runs in the autocast dtype
        dt = torch.get_autocast_dtype(q.device.type)
        q, k, v = q.to(dt), k.to(dt), v.to(dt)
    q, k = _last_dim_contiguous(q), _last_dim_contiguous(k)
    if not (p.fp8 and v.stride(1) == 1):     # fp8 kernels read v keys-contiguous: keep such a v as it is
        v = _last_dim_contiguous(v)
    out, lse, name = ops.attention(q, k, v, p, backend)
    return out, lse, name


def _sdpa_layout_call(q, k, v, causal, scale, window_size, alibi_slopes, softcap, dropout_p, deterministic,
                      backend, fp8, draw_rng=True):
    """attention()'s checks and parameters: (q, k, v as flash-layout views, AttnParams)."""
    _check_batched(q, k, v, "(batch, heads, seqlen, head_dim)", backend)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)   # views in flash-attn's layout
    p = _params(q, k, batch=q.shape[0], causal=causal, scale=scale, window_size=window_size,
                alibi_slopes=alibi_slopes, softcap=softcap, dropout_p=dropout_p, deterministic=deterministic,
                fp8=fp8, scale_name="scale", draw_rng=draw_rng)
    return q, k, v, p


def attention(q, k, v, *, causal: bool = False, scale: Optional[float] = None,
              window_size: tuple[int, int] = (-1, -1), alibi_slopes: Optional[torch.Tensor] = None,
              softcap: float = 0.0, dropout_p: float = 0.0, deterministic: bool = False,
              backend: str = "auto", return_lse: bool = False, fp8: bool = False):
    """softmax(scale * q k^T + masks) v in SDPA's layout: q (B, Hq, Sq, D), k and v (B, Hkv, Sk, D).

    Drop-in for F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale). `causal`
    is aligned to the bottom right (flash-attn's convention): the same as SDPA's when Sq == Sk,
    and what KV-cache decoding needs when Sq < Sk. Returns out (B, Hq, Sq, D) in q's dtype, and
    with return_lse also lse (B, Hq, Sq) float32 (natural log; -inf for a row that sees no key).
    """
    checks.boolean("return_lse", return_lse)
    q, k, v, p = _sdpa_layout_call(q, k, v, causal, scale, window_size, alibi_slopes, softcap, dropout_p,
                                   deterministic, backend, fp8)
    p.extra["returns_lse"] = return_lse
    out, lse, _ = _run(q, k, v, p, backend)
    out = out.transpose(1, 2)
    return (out, lse) if return_lse else out


def explain(q, k, v, *, causal: bool = False, scale: Optional[float] = None,
            window_size: tuple[int, int] = (-1, -1), alibi_slopes: Optional[torch.Tensor] = None,
            softcap: float = 0.0, dropout_p: float = 0.0, deterministic: bool = False,
            backend: str = "auto", return_lse: bool = False, fp8: bool = False) -> str:
    """Which backend would serve attention(q, k, v, ...) with the same arguments, and why."""
    checks.boolean("return_lse", return_lse)
    q, k, v, p = _sdpa_layout_call(q, k, v, causal, scale, window_size, alibi_slopes, softcap, dropout_p,
                                   deterministic, backend, fp8, draw_rng=False)
    p.extra["returns_lse"] = return_lse
    head = (f"q {tuple(q.transpose(1, 2).shape)} k {tuple(k.transpose(1, 2).shape)} {q.dtype} on {q.device}; "
            f"features: {', '.join(p.features()) or 'none'}; backend={dispatch.requested(backend)!r}")
    return dispatch.explanation(head, lambda: dispatch.choose(q, k, v, p, backend))


# ---------------------------------------------------------------- flash-attn compatible

def _dropout_mask(name: str):
    fn = getattr(dispatch.module(name), "dropout_mask", None)
    if fn is None:
        raise NotImplementedError(f"return_attn_probs with dropout: backend {name!r} cannot replay its dropout mask")
    return fn


def s_dmask_block_n(device, head_dim: int, is_dropout: bool, is_causal: bool) -> int:
    """The key block S_dmask is scaled per, as flash-attn 2.8 chooses it (its _get_block_size_n, which its
    tests normalise S_dmask with)."""
    device = torch.device(device)
    major, minor = torch.cuda.get_device_capability(device) if device.type == "cuda" else (0, 0)
    if head_dim <= 32:
        return 128
    if head_dim <= 64:
        return 64 if is_dropout else 128
    if head_dim <= 96:
        return 64
    if head_dim <= 128:                       # sm86/sm89 keep 64 for causal without dropout
        sm8x = major == 8 and minor > 0
        return 64 if not is_dropout and (is_causal or not sm8x) else 32
    return 64


def _s_dmask(q, k, p: AttnParams, keep, alibi_slopes):
    """flash-attn's S_dmask (B, H, Sq, Sk) in q's dtype: exp(S - m), m the row's max over the entry's key block
    and every later one (its kernel walks key blocks last to first), negated where dropout dropped the entry."""
    b, sq, hq, d = q.shape
    sk = k.shape[1]
    if q.device.type == "meta" or q.numel() == 0 or k.numel() == 0:
        return q.new_zeros((b, hq, sq, sk))
    s = reference.scores(q, k, scale=p.scale, window=(p.window_left, p.window_right), alibi_slopes=alibi_slopes,
                         softcap=p.softcap)
    n = s_dmask_block_n(q.device, d, p.dropout_p > 0, p.causal)
    nb = -(-sk // n)
    m = F.pad(s, (0, nb * n - sk), value=-math.inf).view(b, hq, sq, nb, n).amax(-1)
    m = m.flip(-1).cummax(-1).values.flip(-1).repeat_interleave(n, -1)[..., :sk]
    e = torch.exp(s - m.masked_fill(m == -math.inf, 0.0))     # keys no row reaches: exp(-inf) = 0, not NaN
    return (e if keep is None else torch.where(keep, e, -e)).to(q.dtype)


def _attn_probs(q, k, p: AttnParams, name: str):
    """S_dmask of a batch call; see _s_dmask."""
    keep = None
    if p.dropout_p > 0 and q.device.type != "meta":
        keep = _dropout_mask(name)(p.rng, q.shape[0], q.shape[2], q.shape[1], k.shape[1], p.dropout_p)
    return _s_dmask(q, k, p, keep, p.alibi_slopes)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                    softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False, *,
                    backend="auto"):
    """flash-attn 2.x's flash_attn_func: q (B, Sq, Hq, D), k and v (B, Sk, Hkv, D).
    Returns out, or (out, softmax_lse (B, Hq, Sq), S_dmask) with return_attn_probs."""
    _check_batched(q, k, v, "(batch, seqlen, heads, head_dim)", backend)
    p = _params(q, k, batch=q.shape[0], causal=causal, scale=softmax_scale, window_size=window_size,
                alibi_slopes=alibi_slopes, softcap=softcap, dropout_p=dropout_p,
                deterministic=deterministic, fp8=False)
    p.extra["returns_lse"] = p.extra["returns_attn_probs"] = return_attn_probs
    out, lse, name = _run(q, k, v, p, backend)
    if not return_attn_probs:
        return out
    return out, lse, _attn_probs(q, k, p, name)


def _check_descale(name, t, batch: int, heads: int, device, heads_of: str, kv_heads: Optional[int] = None):
    """t, float32 (batch, heads), contiguous. kv_heads (q's descale under GQA): (batch, kv_heads)
    is taken too, one descale per head of k and v for the query heads of its group, as flash-attn
    3 takes q_descale, and repeated over each group."""
    if t is None:
        return None
    checks.tensor(name, t, rank=2)
    if t.dtype != torch.float32:
        raise TypeError(f"{name} must be float32, got {t.dtype}")
    if kv_heads is not None and kv_heads != heads and tuple(t.shape) == (batch, kv_heads):
        t = t.repeat_interleave(heads // kv_heads, dim=1)
    if tuple(t.shape) != (batch, heads):
        also = f" or (batch, heads of k and v) = ({batch}, {kv_heads})" if kv_heads not in (None, heads) else ""
        raise ValueError(f"{name} must have shape (batch, heads of {heads_of}) = ({batch}, {heads}){also}, "
                         f"got {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{name} must be on {device} like q, got {t.device}")
    return t.contiguous()


def flash_attn_fp8_func(q, k, v, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                        alibi_slopes=None, deterministic=False, q_descale=None, k_descale=None, v_descale=None,
                        *, out_dtype=None, return_lse=False, backend="auto"):
    """FP8 attention in flash-attn's layout: q (B, Sq, Hq, D), k and v (B, Sk, Hkv, D).

    q, k, v either
    - float16/bfloat16/float32: quantised per (batch, head) with amax scaling into the device's
      native fp8 (float8_e4m3fnuz on MI300X, float8_e4m3fn on gfx950, NVIDIA sm89+ and the CPU
      interpreter); out in their dtype; differentiable (the backward is the regular
      high-precision one over these tensors, with the fp8 forward's out and lse); or
    - fp8 (all float8_e4m3fn or all float8_e4m3fnuz, the device's native format) with float32
      descales q_descale (B, Hq), k_descale and v_descale (B, Hkv) (None: 1.0), so that
      q ~= q_fp8 * q_descale per (batch, head); q_descale may also be (B, Hkv), as flash-attn 3
      takes it: one per head of k and v, for each query head of its group; out in out_dtype
      (default bfloat16); no backward.
      The kernels read v keys-contiguous: on sm90 the Gluon kernel copies any v once into that
      layout with its keys in the kernel's order (P stays in registers); elsewhere a v stored
      (B, Hkv, D, Sk) in memory (stride(1) == 1) is used without a copy (on sm90 the Gluon
      kernel also wants such a v's other strides in multiples of 16 bytes, else forward.py serves
      the call), and any other v is copied into that layout.
    QK^T and PV run in fp8, PV with fp32 accumulation, QK^T with fp32 accumulation too but where
    fa_ck quantises 16-bit inputs for sm90's Gluon kernel: there q and k are scaled to at most 16
    and QK^T sums into f16 (no sum of products can overflow it; the error against float64 is the
    same, README "FP8"), FA_CK_TRITON_CONFIG='{"fwd": {"f16_scores": false}}' for fp32. P is rounded
    to fp8 times the format's max; softmax statistics stay fp32.
    Returns out, or (out, softmax_lse (B, Hq, Sq) float32) with return_lse.
    """
    checks.boolean("return_lse", return_lse)
    fp8_in = isinstance(q, torch.Tensor) and q.dtype in _FP8_DTYPES
    _check_batched(q, k, v, "(batch, seqlen, heads, head_dim)", backend, _FP8_DTYPES if fp8_in else _DTYPES)
    b, hq, hkv = q.shape[0], q.shape[2], k.shape[2]
    if not fp8_in:
        for name, t in (("q_descale", q_descale), ("k_descale", k_descale), ("v_descale", v_descale)):
            if t is not None:
                raise ValueError(f"{name} is only for fp8 q, k, v; {q.dtype} inputs are quantised by fa_ck")
        if out_dtype is not None and out_dtype != q.dtype:
            raise ValueError(f"out_dtype is only for fp8 q, k, v; {q.dtype} inputs give {q.dtype}, got {out_dtype}")
    elif out_dtype is not None and out_dtype not in _DTYPES:
        raise TypeError(f"out_dtype must be float16, bfloat16 or float32, got {out_dtype}")
    p = _params(q, k, batch=b, causal=causal, scale=softmax_scale, window_size=window_size,
                alibi_slopes=alibi_slopes, softcap=softcap, dropout_p=0.0, deterministic=deterministic, fp8=True)
    if fp8_in:
        p.q_descale = _check_descale("q_descale", q_descale, b, hq, q.device, "q", kv_heads=hkv)
        p.k_descale = _check_descale("k_descale", k_descale, b, hkv, q.device, "k and v")
        p.v_descale = _check_descale("v_descale", v_descale, b, hkv, q.device, "k and v")
        p.out_dtype = out_dtype or torch.bfloat16
    p.extra["returns_lse"] = return_lse
    out, lse, _ = _run(q, k, v, p, backend)
    return (out, lse) if return_lse else out


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                           alibi_slopes=None, deterministic=False, return_attn_probs=False,
                           block_table=None, *, backend="auto"):
    """flash-attn 2.x's varlen call: q (total_q, Hq, D), k and v (total_k, Hkv, D), int32 cu_seqlens.
    Returns out, or (out, softmax_lse (Hq, total_q), S_dmask (B, Hq, max_seqlen_q, max_seqlen_k))."""
    if block_table is not None:    # first: a paged k/v cache has another shape, which the checks below refuse
        raise NotImplementedError("block_table: fa_ck does not support a paged KV cache yet")
    _check_qkv(q, k, v, 3, "(total_tokens, heads, head_dim)")
    b = _check_cu_seqlens("cu_seqlens_q", cu_seqlens_q, q.shape[0], q.device, max_seqlen_q, "max_seqlen_q")
    bk = _check_cu_seqlens("cu_seqlens_k", cu_seqlens_k, k.shape[0], q.device, max_seqlen_k, "max_seqlen_k")
    if b != bk:
        raise ValueError(f"cu_seqlens_q and cu_seqlens_k must describe the same batch, got {b} and {bk} sequences")
    _check_backend(backend)
    p = _params(q, k, batch=b, causal=causal, scale=softmax_scale, window_size=window_size,
                alibi_slopes=alibi_slopes, softcap=softcap, dropout_p=dropout_p,
                deterministic=deterministic, fp8=False, seqlens=(int(max_seqlen_q), int(max_seqlen_k)))
    p.cu_seqlens_q, p.cu_seqlens_k = cu_seqlens_q.contiguous(), cu_seqlens_k.contiguous()
    p.max_seqlen_q, p.max_seqlen_k = int(max_seqlen_q), int(max_seqlen_k)
    p.extra["returns_lse"] = p.extra["returns_attn_probs"] = return_attn_probs
    out, lse, name = _run(q, k, v, p, backend)
    if not return_attn_probs:
        return out
    probs = q.new_zeros((b, q.shape[1], p.max_seqlen_q, p.max_seqlen_k))
    if q.device.type == "meta":
        return out, lse, probs
    keep = (_dropout_mask(name)(p.rng, b, q.shape[1], p.max_seqlen_q, p.max_seqlen_k, p.dropout_p)
            if p.dropout_p > 0 else None)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for i in range(b):                         # sequence i in the top-left corner of probs[i]
        sq_i, sk_i = cq[i + 1] - cq[i], ck[i + 1] - ck[i]
        sl = None if p.alibi_slopes is None else (p.alibi_slopes if p.alibi_slopes.dim() == 1 else p.alibi_slopes[i])
        ki = None if keep is None else keep[i:i + 1, :, :sq_i, :sk_i]
        probs[i, :, :sq_i, :sk_i] = _s_dmask(q[None, cq[i]:cq[i + 1]], k[None, ck[i]:ck[i + 1]], p, ki, sl)[0]
    return out, lse, probs


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False,
                              *, backend="auto"):
    """qkv (B, S, 3, H, D)."""
    checks.tensor("qkv", qkv, rank=5)
    if qkv.shape[2] != 3:
        raise ValueError(f"qkv must be (batch, seqlen, 3, heads, head_dim), got {tuple(qkv.shape)}")
    return flash_attn_func(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], dropout_p, softmax_scale, causal,
                           window_size, softcap, alibi_slopes, deterministic, return_attn_probs, backend=backend)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                             softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False,
                             *, backend="auto"):
    """q (B, Sq, Hq, D), kv (B, Sk, 2, Hkv, D)."""
    checks.tensor("kv", kv, rank=5)
    if kv.shape[2] != 2:
        raise ValueError(f"kv must be (batch, seqlen, 2, heads, head_dim), got {tuple(kv.shape)}")
    return flash_attn_func(q, kv[:, :, 0], kv[:, :, 1], dropout_p, softmax_scale, causal, window_size,
                           softcap, alibi_slopes, deterministic, return_attn_probs, backend=backend)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None,
                                     causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                                     deterministic=False, return_attn_probs=False, *, backend="auto"):
    """qkv (total, 3, H, D)."""
    checks.tensor("qkv", qkv, rank=4)
    if qkv.shape[1] != 3:
        raise ValueError(f"qkv must be (total_tokens, 3, heads, head_dim), got {tuple(qkv.shape)}")
    return flash_attn_varlen_func(qkv[:, 0], qkv[:, 1], qkv[:, 2], cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                                  dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                                  deterministic, return_attn_probs, backend=backend)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False, return_attn_probs=False,
                                    *, backend="auto"):
    """q (total_q, Hq, D), kv (total_k, 2, Hkv, D)."""
    checks.tensor("kv", kv, rank=4)
    if kv.shape[1] != 2:
        raise ValueError(f"kv must be (total_tokens, 2, heads, head_dim), got {tuple(kv.shape)}")
    return flash_attn_varlen_func(q, kv[:, 0], kv[:, 1], cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                  dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                                  deterministic, return_attn_probs, backend=backend)
