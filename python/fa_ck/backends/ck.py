"""The ck backend: Composable Kernel's tile FMHA through the compiled extension fa_ck._ck (ROCm only).

Built by setup.py on a ROCm torch (README, section ROCm). Importing this module never fails: without the
extension, available() says why. What CK's FMHA cannot express is named by unsupported(), and
`auto` sends those calls to triton:
- softcap together with ALiBi (CK has no such instance), and softcap when a gradient is needed
  (CK's backward has no softcap);
- head dims that are not a multiple of 8 or above the largest bucket built (FA_CK_HDIMS) for the forward,
  or for the backward when a gradient is recorded;
- lse handed back under autograd (CK's backward takes no gradient through lse), and
  return_attn_probs with dropout (ck cannot replay its dropout mask);
- float32, fp8, CPU tensors, tensors too large for CK's 32-bit strides.
Dropout works, but CK draws its own Philox stream from [seed, offset]: the same rng gives a
different mask than the triton backend (each backend's forward and backward agree with each other).

KV-cache decoding (kvcache_forward) runs CK's split-KV kernel and its combine kernel, dense or paged,
with GQA, cache_batch_idx, causal/window masks, ALiBi, softcap and lse. kvcache_gap names what they
cannot serve: head dims other than 32, 64, 65-96, 128, 256; pages that are not a multiple of 128 keys
(vLLM's 16 among them); cache_leftpad with a paged cache; more than 128 splits; softcap with ALiBi.
Its append (kvcache_append) runs CK's appendkv kernel; append_gap names what that kernel cannot do (rotary
tables not in q's dtype or not contiguous, rotary_dim not a multiple of 16), and those appends take
reference.kvcache_append's torch ops instead.
The ck backend is compile-checked for gfx942 in CI and has not been run on an MI300X (docs/rocm.md).
"""
from __future__ import annotations

import torch

from .. import reference
from ..params import AttnParams, KVCacheParams

NAME = "ck"
_INT32_MAX = 2**31 - 1

try:  # the extension exists only after a ROCm build
    from .. import _ck
    _IMPORT_ERROR = None
except Exception as e:  # noqa: BLE001 - any import failure just makes the backend unavailable
    _ck, _IMPORT_ERROR = None, e


def available() -> tuple[bool, str]:
    if not getattr(torch.version, "hip", None):
        return False, f"torch {torch.__version__} is not a ROCm build (CK kernels need ROCm)"
    if _ck is None:
        return False, (f"extension fa_ck._ck is not built ({type(_IMPORT_ERROR).__name__}: {_IMPORT_ERROR}); "
                       "build it with `pip install --no-build-isolation .` (README, section ROCm)")
    if not torch.cuda.is_available():
        return False, "no ROCm GPU visible"
    return True, f"CK FMHA, head dims {built_hdims('fwd')} (backward {built_hdims('bwd')})"


# What a full build holds; CK's codegen has no d192 backward tile, so d129-192 backward runs the 256 bucket,
# and no d192 split-KV tile; its appendkv tiles are 32, 64, 128, 256 (65-96 run the d128 one).
_SHIPPED = {"fwd": (32, 64, 96, 128, 192, 256), "bwd": (32, 64, 96, 128, 256), "kvcache": (32, 64, 96, 128, 256),
            "appendkv": (32, 64, 128, 256)}


def built_hdims(direction: str) -> list[int]:
    """The head-dim buckets the extension holds kernels for, per direction ('fwd', 'bwd', 'kvcache', 'appendkv'):
    what the extension reports it was built with (FA_CK_HDIMS), else the full shipped set."""
    if _ck is None:
        return list(_SHIPPED[direction])
    return sorted(getattr(_ck, f"{direction}_hdims"))


def unsupported(q, k, v, p: AttnParams) -> str | None:
    ok, why = available()
    return why if not ok else capability_gap(q, k, v, p)


def _hdim_gap(d: int, direction: str) -> str | None:
    dims = built_hdims(direction)
    name = "head_dim" if direction == "fwd" else "backward of head_dim"
    if not dims:
        return f"{name} {d}: no {direction} kernels built (FA_CK_HDIMS)"
    if d > max(dims):
        return f"{name} {d} > {max(dims)} (built: {dims})"
    return None


def capability_gap(q, k, v, p: AttnParams) -> str | None:
    """What the CK instances built here (or, without the extension, shipped) cannot do for this call
    (None: they can). A call that records a gradient needs the backward too, so it is checked here,
    before the forward runs, never after."""
    if not q.is_cuda:
        return "CPU tensors"
    if p.fp8:
        return "fp8"
    if q.dtype not in (torch.float16, torch.bfloat16):
        return f"dtype {q.dtype} (CK: float16, bfloat16)"
    d = q.shape[-1]
    if v.shape[-1] != d:
        return "v head dim differs from q's"
    if d % 8:
        return f"head_dim {d} not a multiple of 8"
    gap = _hdim_gap(d, "fwd")
    if gap:
        return gap
    if p.softcap > 0 and p.alibi_slopes is not None:
        return "softcap with alibi"
    if p.dropout_p > 0 and p.extra.get("returns_attn_probs"):
        return "return_attn_probs with dropout (ck cannot replay its dropout mask)"
    if any(s > _INT32_MAX for t in (q, k, v) for s in t.stride()):
        return "strides beyond CK's 32-bit indexing"
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        if p.softcap > 0:
            return "softcap backward"
        if p.extra.get("returns_lse"):
            return "lse returned under autograd (CK's backward takes no gradient through lse)"
        return _hdim_gap(d, "bwd")
    return None


def _common(p: AttnParams, q):
    alibi = p.alibi_slopes
    if alibi is not None:
        alibi = alibi.to(device=q.device, dtype=torch.float32).contiguous()
    return (p.cu_seqlens_q, p.cu_seqlens_k, int(p.max_seqlen_q), int(p.max_seqlen_k), float(p.scale),
            int(p.window_left), int(p.window_right), alibi)


def forward(q, k, v, p: AttnParams):
    cu_q, cu_k, mq, mk, scale, wl, wr, alibi = _common(p, q)
    out, lse = _ck.fwd(q, k, v, cu_q, cu_k, mq, mk, scale, wl, wr, alibi, float(p.softcap),
                       float(p.dropout_p), p.rng)
    return out, lse


def backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    if dlse is not None:
        raise NotImplementedError("ck backend: no gradient through lse (CK's backward has no dlse input); "
                                  "use backend='triton' when lse feeds the loss")
    if p.softcap > 0:
        raise NotImplementedError("ck backend: CK's backward has no softcap")
    cu_q, cu_k, mq, mk, scale, wl, wr, alibi = _common(p, q)
    dq, dk, dv = _ck.bwd(do, q, k, v, out, lse, cu_q, cu_k, mq, mk, scale, wl, wr, alibi,
                         float(p.dropout_p), p.rng, bool(p.deterministic))
    return dq, dk, dv


# ---------------------------------------------------------------- KV-cache decoding

_KV_PAGE_MULTIPLE = 128   # CK's paged split-KV reads whole key tiles from one page (csrc/fa_ck.hpp)
_KV_MAX_SPLITS = 128      # CK's combine kernel takes at most 128 splits


def _kv_hdim_gap(d: int) -> str | None:
    """CK's split-KV dispatcher serves its buckets unpadded, and 65-96 through the d96 kernel, which pads the
    head dim (the shipped set, build_ck.SPLITKV_FILTER)."""
    if d % 8:
        return f"head_dim {d} not a multiple of 8"
    dims = built_hdims("kvcache")
    if d in dims or (96 in dims and 64 < d <= 96):
        return None
    served = ", ".join("65-96" if h == 96 else str(h) for h in dims) or "none"
    return f"head_dim {d}: CK's split-KV kernels serve head dims {served} (FA_CK_HDIMS)"


def _dense_rows(k_cache) -> int:
    """Rows between the starts of two cache rows of a dense cache, or -1 when that is not a whole number."""
    if k_cache.shape[0] <= 1:
        return 0
    row, batch = k_cache.stride(1), k_cache.stride(0)
    return batch // row if row > 0 and batch % row == 0 else -1


def _paged_gap(k_cache, p: KVCacheParams, pipeline: str) -> str | None:
    """What CK's paged pipelines (split-KV and appendkv alike) cannot take of the cache's pages and block table."""
    page = k_cache.shape[1]
    if page % _KV_PAGE_MULTIPLE:
        return f"page size {page} (CK's paged {pipeline} needs a multiple of {_KV_PAGE_MULTIPLE})"
    if p.block_table.stride(1) != 1:
        return "a block_table whose last dim is not contiguous (CK reads each row's entries in a row)"
    return None


def kvcache_gap(q, k_cache, v_cache, p: KVCacheParams) -> str | None:
    """What the split-KV instances built here (or, without the extension, shipped) cannot do for this
    KV-cache call (None: they can)."""
    if not q.is_cuda:
        return "CPU tensors"
    if q.dtype not in (torch.float16, torch.bfloat16):
        return f"dtype {q.dtype} (CK: float16, bfloat16)"
    if k_cache.dtype != q.dtype or v_cache.dtype != q.dtype:
        return "cache dtype differs from q's"
    d = q.shape[-1]
    if k_cache.shape[-1] != d or v_cache.shape[-1] != d:
        return "cache head dim differs from q's"
    gap = _kv_hdim_gap(d)
    if gap:
        return gap
    if p.softcap > 0 and p.alibi_slopes is not None:
        return "softcap with alibi"
    if p.num_splits > _KV_MAX_SPLITS:
        return f"num_splits {p.num_splits} > {_KV_MAX_SPLITS} (CK's combine kernel)"
    if any(t.stride(-1) != 1 for t in (k_cache, v_cache)):
        return "caches whose last dim is not contiguous"
    if any(s > _INT32_MAX for t in (q, k_cache, v_cache) for s in t.stride()):
        return "strides beyond CK's 32-bit indexing"
    if p.paged:
        gap = _paged_gap(k_cache, p, "split-KV")
        if gap:
            return gap
        if p.leftpad is not None:
            return "cache_leftpad with a paged cache (CK's paged split-KV reads keys from the page start)"
        return None
    rows = _dense_rows(k_cache)
    if rows < 0 or rows != _dense_rows(v_cache):
        return "a dense cache whose batch stride is not a whole number of rows (the same for k and v)"
    if k_cache.shape[0] * rows > _INT32_MAX:
        return "a dense cache with more rows than CK's 32-bit row index"
    return None


def kvcache_unsupported(q, k_cache, v_cache, p: KVCacheParams) -> str | None:
    ok, why = available()
    if not ok:
        return why
    if not hasattr(_ck, "kvcache_fwd"):
        return "fa_ck._ck was built without KV-cache kernels: rebuild it (README, section ROCm)"
    return kvcache_gap(q, k_cache, v_cache, p)


def kvcache_forward(q, k_cache, v_cache, p: KVCacheParams):
    """out (B, Sq, Hq, D), lse (B, Hq, Sq) float32; reads the cache, never writes it, never syncs the host."""
    alibi = p.alibi_slopes
    if alibi is not None:
        alibi = alibi.to(device=q.device, dtype=torch.float32).contiguous()
    batch_idx = None if p.paged else p.batch_idx          # paged rows read block_table[b] only
    out, lse = _ck.kvcache_fwd(q, k_cache, v_cache, p.seqlens_k, p.leftpad, batch_idx, p.block_table,
                               float(p.scale), int(p.window_left), int(p.window_right), alibi, float(p.softcap),
                               int(p.num_splits))
    return out, lse


# ---------------------------------------------------------------- the append

_ROTARY_MULTIPLE = 16     # CK's appendkv rotates whole 8-element thread slices (csrc/fa_ck.hpp kRotaryMultiple)


def append_gap(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, p: KVCacheParams) -> str | None:
    """What CK's appendkv kernels built here (or, without the extension, shipped) cannot do for this append (None:
    they can); kvcache_append then appends with reference.kvcache_append's torch ops."""
    if _ck is not None and not hasattr(_ck, "kvcache_append"):
        return "fa_ck._ck was built without appendkv kernels"
    if not q.is_cuda:
        return "CPU tensors"
    if q.dtype not in (torch.float16, torch.bfloat16) or any(t.dtype != q.dtype for t in (k_cache, v_cache, k, v)):
        return f"dtype {q.dtype} (CK: float16, bfloat16)"
    if 0 in (*q.shape, *k_cache.shape):
        return "empty tensors"
    d = q.shape[-1]
    if not any(tile >= d for tile in built_hdims("appendkv")):      # CK's dispatcher takes the smallest tile >= d
        return f"head_dim {d}: no appendkv kernel built for it (FA_CK_HDIMS)"
    if any(s > _INT32_MAX for t in (q, k_cache, v_cache, k, v) for s in t.stride()):
        return "strides beyond CK's 32-bit indexing"
    gap = _paged_gap(k_cache, p, "appendkv") if p.paged else None
    if gap:
        return gap
    if rotary_cos is None:
        return None
    if rotary_cos.dtype != q.dtype or rotary_sin.dtype != q.dtype:
        return (f"rotary tables in {rotary_cos.dtype} (CK reads them in q's dtype, {q.dtype}: rounding them would "
                f"change the result)")
    if not (rotary_cos.is_contiguous() and rotary_sin.is_contiguous()):
        return "rotary tables that are not contiguous (CK reads rows of rotary_dim / 2 in a row)"
    rotary_dim = 2 * rotary_cos.shape[1]
    if rotary_dim % _ROTARY_MULTIPLE:
        return f"rotary_dim {rotary_dim} (CK's appendkv rotates multiples of {_ROTARY_MULTIPLE})"
    return None


def kvcache_append(q, k_cache, v_cache, k, v, cache_seqlens, rotary_cos, rotary_sin, interleaved, q_per_position,
                   p: KVCacheParams):
    """k, v into the cache in place at cache_seqlens (int32 (B,)), the keys rotated; -> q rotated into a new tensor
    with a rotary table, else q. CK's appendkv kernel where append_gap allows, else torch ops; no host sync."""
    if _ck is None or append_gap(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, p) is not None:
        return reference.kvcache_append(q, k_cache, v_cache, k, v, cache_seqlens, rotary_cos, rotary_sin,
                                        interleaved=interleaved, q_per_position=q_per_position,
                                        batch_idx=p.batch_idx, block_table=p.block_table)
    batch_idx = None if p.paged else p.batch_idx
    rotated = _ck.kvcache_append(q, k_cache, v_cache, k, v, cache_seqlens, batch_idx, p.block_table, rotary_cos,
                                 rotary_sin, bool(interleaved), bool(q_per_position))
    return q if rotary_cos is None else rotated
