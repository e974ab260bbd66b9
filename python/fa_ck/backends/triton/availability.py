"""Whether the triton backend can serve a call here, and if not, what it lacks."""
from __future__ import annotations

import torch

from ...params import FP8_DTYPES, AttnParams, KVCacheParams
from . import device

MAX_HEAD_DIM = 256
MAX_GRID_Z = 65535        # batch entries (or varlen sequences) are the grid's z
MAX_GRID_Y = 65535        # heads are its y (fp8 quantisation's: q's heads, then k's and v's)
DTYPES = (torch.float16, torch.bfloat16, torch.float32)
DECODE_DTYPES = (torch.float16, torch.bfloat16)
MIN_PAGE = 16             # the decode kernels' smallest page (a power of two)

try:
    import triton  # noqa: F401

    from .kernels import backward, decode, forward, quantize  # noqa: F401  (a triton too old for our kernels fails here)
    IMPORT_ERROR = ""
except Exception as e:  # no triton, or a triton too old for our kernels
    IMPORT_ERROR = f"{type(e).__name__}: {e}"


def available() -> tuple[bool, str]:
    if IMPORT_ERROR:
        return False, f"triton is not importable ({IMPORT_ERROR})"
    if device.INTERPRET:
        return True, "TRITON_INTERPRET=1: kernels run in the interpreter on CPU tensors"
    if not torch.cuda.is_available():
        return False, "no GPU (set TRITON_INTERPRET=1 before importing fa_ck to run the kernels on the CPU)"
    return True, ""


def _not_here(q) -> str | None:
    ok, why = available()
    if not ok:
        return why
    if q.device.type == "cpu" and not device.INTERPRET:
        return "CPU tensors (outside TRITON_INTERPRET=1)"
    if q.device.type not in ("cpu", "cuda"):
        return f"{q.device.type} tensors"
    return None


def unsupported(q, k, v, p: AttnParams) -> str | None:
    where = _not_here(q)
    if where:
        return where
    if q.dtype not in DTYPES and not (p.fp8 and q.dtype in FP8_DTYPES):
        return f"dtype {q.dtype}"
    batch = p.cu_seqlens_q.numel() - 1 if p.varlen else q.shape[0]
    if batch > MAX_GRID_Z:
        return f"{'sequences' if p.varlen else 'batch'} {batch} (the launch grid's z holds {MAX_GRID_Z})"
    quantised = p.fp8 and q.dtype not in FP8_DTYPES
    heads = q.shape[-2] + (k.shape[-2] + v.shape[-2] if quantised else 0)
    if heads > MAX_GRID_Y:
        return (f"{q.shape[-2]} heads{f' ({heads} with the k and v heads quantised alongside)' if quantised else ''}: "
                f"the launch grid's y holds {MAX_GRID_Y}")
    if q.shape[-1] > MAX_HEAD_DIM or v.shape[-1] != q.shape[-1]:
        return f"head_dim {q.shape[-1]} (supported: 1..{MAX_HEAD_DIM}, same for q, k and v)"
    if p.fp8:
        native = device.fp8_dtype(q.device)
        if native is None:
            return f"fp8 on {device.arch(q.device)} (no fp8 matrix instructions)"
        if q.dtype in FP8_DTYPES and q.dtype != native:
            return f"fp8 inputs in {q.dtype} (this device multiplies {native})"
        if p.varlen:
            return "fp8 with varlen (per-sequence scales are not implemented)"
        if p.dropout_p > 0:
            return "fp8 with dropout (not implemented)"
    return None


def kvcache_unsupported(q, k_cache, v_cache, p: KVCacheParams) -> str | None:
    """What the decode kernels (kernels/decode.py) cannot serve, or None."""
    where = _not_here(q)
    if where:
        return where
    if q.dtype not in DECODE_DTYPES:
        return f"dtype {q.dtype} (the decode kernels take float16 and bfloat16)"
    if k_cache.dtype != q.dtype or v_cache.dtype != q.dtype:
        return f"a {k_cache.dtype} / {v_cache.dtype} cache with {q.dtype} q (fp8 caches are not implemented)"
    d = q.shape[-1]
    if d > MAX_HEAD_DIM or k_cache.shape[-1] != d or v_cache.shape[-1] != d:
        return f"head_dim {d} (supported: 1..{MAX_HEAD_DIM}, same for q and the caches)"
    if any(t.stride(-1) != 1 for t in (q, k_cache, v_cache)):
        return "a head dim that is not contiguous (stride(-1) != 1) in q or the caches"
    page = k_cache.shape[1]
    if p.paged and (page < MIN_PAGE or page & (page - 1)):
        return f"page size {page} (the decode kernels take powers of two from {MIN_PAGE})"
    b, sq, hq = q.shape[:3]
    if b > MAX_GRID_Z or hq > MAX_GRID_Y or -(-sq * (hq // k_cache.shape[2]) // 16) > MAX_GRID_Y:
        return f"batch {b}, {hq} heads, {sq} queries (the launch grids hold {MAX_GRID_Z} of each)"
    return None
