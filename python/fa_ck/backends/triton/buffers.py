"""The tensors around the kernels: output buffers (poisoned under FA_CK_POISON=1, with NaN
canaries around them), stand-ins for absent tensor arguments, the stride tuples the kernels take,
and what TMA and host-made descriptors can address."""
from __future__ import annotations

import math
import os

import torch

GUARD = 4096              # elements of NaN canary on each side of a poisoned buffer
_canaries: list = []
_PLACEHOLDERS: dict = {}


def poisoning() -> bool:
    """FA_CK_POISON=1 (the tests): outputs start as NaN inside NaN canaries."""
    return os.environ.get("FA_CK_POISON") == "1"


def empty(shape, dtype, device, poison: bool) -> torch.Tensor:
    """An output buffer. poison: filled with NaN and surrounded by NaN canaries, so an element the
    kernels never write cannot pass for a right answer, and check_canaries() catches a write past
    either end."""
    if not poison:
        return torch.empty(shape, dtype=dtype, device=device)
    n = math.prod(shape)
    buf = torch.full((n + 2 * GUARD,), float("nan"), dtype=dtype, device=device)
    _canaries.append(buf)
    return buf[GUARD:GUARD + n].view(shape)


def has_canaries() -> bool:
    return bool(_canaries)


def check_canaries(what: str) -> None:
    """Raise if a kernel wrote outside an output buffer made since the last check (poison only)."""
    bufs, _canaries[:] = list(_canaries), []
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        return                               # reading them would sync inside a CUDA graph capture
    for buf in bufs:
        guards = torch.cat([buf[:GUARD], buf[-GUARD:]])
        if not torch.isnan(guards.float()).all():
            raise RuntimeError(f"fa_ck triton {what}: a kernel wrote outside its output buffer")


def placeholders(device):
    """(int32, float32, int64 (2,)) stand-ins for absent tensor arguments, made once per device;
    kernels never read them (their switches are off). Empty, not filled: made inside a CUDA graph
    capture, a fill would not run until replay."""
    if device not in _PLACEHOLDERS:
        _PLACEHOLDERS[device] = (torch.empty(0, dtype=torch.int32, device=device),
                                 torch.empty(0, dtype=torch.float32, device=device),
                                 torch.empty(2, dtype=torch.int64, device=device))
    return _PLACEHOLDERS[device]


def cdiv(a: int, b: int) -> int:
    """Grid sizes (triton.cdiv is a constexpr_function in Triton 3.7: host time on every call)."""
    return -(-a // b)


def strides(t, varlen: bool) -> tuple:
    """(batch, seq, head) strides; a packed varlen tensor has no batch stride."""
    st = t.stride()
    return (0, st[0], st[1]) if varlen else st[:3]


def lse_strides(lse, varlen: bool) -> tuple:
    return (0, lse.stride(0)) if varlen else (lse.stride(0), lse.stride(1))


def tma_ok(*tensors, keys_contiguous=None, max_head_dim: int = 128) -> bool:
    """Whether TMA can read these (.., S, H, D) tensors: head dim at most max_head_dim, unit stride
    along the tile's inner dim (the head dim; the keys for `keys_contiguous`, fp8's v), 16-byte
    aligned base and other strides (a head's tile may start at any row)."""
    for t in tensors:
        if t.shape[-1] > max_head_dim or t.data_ptr() % 16:
            return False
        st = t.stride()
        inner = 1 if t is keys_contiguous else len(st) - 1
        size = t.element_size()
        for i, s in enumerate(st):
            if (s != 1) if i == inner else (s * size) % 16:
                return False
    return True


def host_desc_ok(*tensors) -> bool:
    """Whether host-made descriptors can describe these (B, S, H, D) tensors: nothing empty (a
    tensor map has no zero-sized dimension) and no stride 0 on a dimension longer than 1 (an
    expanded tensor; such calls build their descriptors on the device)."""
    return all(t.numel() > 0 and all(s != 0 or n == 1 for s, n in zip(t.stride(), t.shape)) for t in tensors)
