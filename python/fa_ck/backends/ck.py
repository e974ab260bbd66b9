"""The ck backend: Composable Kernel's tile FMHA through the compiled extension fa_ck._ck (ROCm only).

Built by setup.py on a ROCm torch (README, section ROCm). Importing this module never fails: without the
extension, available() says why. What CK's FMHA cannot express is named by unsupported(), and
`auto` sends those calls to triton:
- softcap together with ALiBi (CK has no such instance), and softcap when a gradient is needed
  (CK's backward has no softcap);
- head dims that are not a multiple of 8 or above 256 (or above the largest built with FA_CK_HDIMS);
- float32, fp8, CPU tensors, tensors too large for CK's 32-bit strides.
Dropout works, but CK draws its own Philox stream from [seed, offset]: the same rng gives a
different mask than the triton backend (each backend's forward and backward agree with each other).
The ck backend is compile-checked for gfx942 in CI and has not been run on an MI300X (docs/rocm.md).
"""
from __future__ import annotations

import torch

from ..params import AttnParams

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
    return True, f"CK FMHA, head dims {list(_ck.hdims)}"


def _built_hdims() -> list[int]:
    return list(_ck.hdims) if _ck is not None else [32, 64, 96, 128, 192, 256]


def unsupported(q, k, v, p: AttnParams) -> str | None:
    ok, why = available()
    return why if not ok else capability_gap(q, k, v, p)


def capability_gap(q, k, v, p: AttnParams) -> str | None:
    """What the CK instances we ship cannot do for this call (None: they can), whether or not
    the extension is built here."""
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
    if d > max(_built_hdims()):
        return f"head_dim {d} > {max(_built_hdims())}"
    if p.softcap > 0:
        if p.alibi_slopes is not None:
            return "softcap with alibi"
        if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
            return "softcap backward"
    if any(s > _INT32_MAX for t in (q, k, v) for s in t.stride()):
        return "strides beyond CK's 32-bit indexing"
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
