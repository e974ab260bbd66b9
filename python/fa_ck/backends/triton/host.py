"""Host-side helpers the triton backend's launchers share (__init__.py, launch_gluon.py): grid
sizes, the (batch, seq, head) stride tuples the kernels take, stand-ins for absent tensor
arguments, and whether TMA can address a tensor. No launches here: see plans.py for those.
"""
from __future__ import annotations

import torch

from ...params import AttnParams


def _cdiv(a: int, b: int) -> int:
    """Grid sizes; triton.cdiv is a constexpr_function in Triton 3.7, ~7 us of host time a call."""
    return -(-a // b)


def _keys_padded(s: int) -> int:
    """A keys-contiguous fp8 v's row length: s keys padded to a multiple of 16, so that TMA can
    address each row (and P_REGS's key order, in groups of 16, covers its last keys)."""
    return _cdiv(s, 16) * 16


def _strides(t, varlen: bool):
    """(batch, seq, head) strides; a packed varlen tensor has no batch stride."""
    st = t.stride()
    return (0, st[0], st[1]) if varlen else st[:3]


def _lse_strides(lse, varlen: bool):
    return (0, lse.stride(0)) if varlen else (lse.stride(0), lse.stride(1))


_PLACEHOLDERS: dict = {}


def _placeholders(device):
    """Stand-ins for absent tensor arguments, made once per device (fresh ones cost a fill
    kernel and allocations on every call); kernels never read them: their switches (VARLEN,
    ALIBI, DROPOUT) are off. Empty, not zeroed: made inside a CUDA graph capture, a fill would
    not run until replay."""
    if device not in _PLACEHOLDERS:
        _PLACEHOLDERS[device] = (torch.empty(0, dtype=torch.int32, device=device),
                                 torch.empty(0, dtype=torch.float32, device=device),
                                 torch.empty(2, dtype=torch.int64, device=device))
    return _PLACEHOLDERS[device]


def _tma_ok(*tensors, keys_contiguous=None, max_head_dim=128) -> bool:
    """Whether our TMA paths can serve these (.., S, H, D) tensors: head dim at most max_head_dim
    (128 for forward.py's TMA path: Triton 3.6's ptxas crashed on its d256 forward; the Gluon
    forward's tiles take 256), unit stride along the tile's inner dim (the
    head dim; the keys for `keys_contiguous`, fp8's v), 16-byte aligned base and other strides
    (a head's tile may start at any row)."""
    for t in tensors:
        if t.shape[-1] > max_head_dim or t.data_ptr() % 16:
            return False
        strides = t.stride()
        inner = 1 if t is keys_contiguous else len(strides) - 1
        size = t.element_size()
        for i, st in enumerate(strides):
            if (st != 1) if i == inner else (st * size) % 16:
                return False
    return True



def _causal_mask(p: AttnParams) -> bool:
    """The call's mask is causal's alone (window_right 0, no left window)."""
    return p.window_right == 0 and p.window_left < 0


_FP32_TINY = 2.0 ** -126          # the smallest normal float32


def _raw_max(cfg: dict, p: AttnParams, scale_log2: float) -> bool:
    """Whether a forward takes the row max of raw scores (RAW_MAX, common.softmax_step): asked or
    by default, where the score is the raw one scaled (no softcap or ALiBi) by a scale_log2 (the
    kernels' argument, from _scalars) known positive in float32: with a negative one the raw max
    would be the minimum's, and with one that rounds to 0 a masked score's -inf times it would be
    NaN. The Gluon fp8 kernel folds the descales into the scale and keeps that product positive
    and normal itself (a caller's descales may be of any sign, or 0: forward_gluon._consumer takes
    its magnitude, forward_gluon_loads._copy_q_signed negates q where it is negative);
    forward.py's fp8 kernel spilled with it (the launcher leaves it off)."""
    return (bool(cfg.get("RAW_MAX", True)) and scale_log2 >= _FP32_TINY
            and p.softcap == 0 and p.alibi_slopes is None)
