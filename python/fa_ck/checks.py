"""Argument checks shared by the public calls (interface.py, kvcache.py). Each error names the argument."""
from __future__ import annotations

import math
import numbers
import operator
from typing import Optional

import torch


def tensor(name: str, t, rank: Optional[int] = None, dtype=None, device=None) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if rank is not None and t.dim() != rank:
        raise ValueError(f"{name} must have {rank} dims, got shape {tuple(t.shape)}")
    if dtype is not None and t.dtype != dtype:
        raise TypeError(f"{name} must be {dtype}, got {t.dtype}")
    if device is not None and t.device != device:
        raise ValueError(f"{name} must be on {device} like q, got {t.device}")
    return t


def boolean(name: str, x) -> bool:
    if not isinstance(x, bool):
        raise TypeError(f"{name} must be a bool, got {type(x).__name__}")
    return x


def integer(x) -> Optional[int]:
    """x as an int if it is one (Python, numpy or a 0-dim integer tensor), else None; bools are not."""
    if isinstance(x, bool) or str(getattr(x, "dtype", "")) in ("bool", "torch.bool"):
        return None
    if isinstance(x, torch.Tensor) and x.dim() != 0:
        return None
    try:
        return operator.index(x)
    except TypeError:
        return None


def real(name: str, x, lo=None, hi=None, hi_open=False) -> float:
    """A finite real number (Python's or numpy's, what float() takes exactly), never a bool or a tensor."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        hint = " (pass a Python float, e.g. float(t))" if isinstance(x, torch.Tensor) else ""
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}{hint}")
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    if (lo is not None and x < lo) or (hi is not None and (x >= hi if hi_open else x > hi)):
        bound = f"in [{lo}, {hi})" if hi_open else f">= {lo}"
        raise ValueError(f"{name} must be {bound}, got {x}")
    return x


def window(window_size) -> tuple[int, int]:
    """Any sequence of two integers, as flash-attn takes it: a tuple, a list, a 2-element integer tensor."""
    vals = None
    try:
        if not isinstance(window_size, (str, bytes)) and len(window_size) == 2:
            vals = [integer(window_size[0]), integer(window_size[1])]
    except (TypeError, IndexError, KeyError):     # no len() or no [0], [1]: not a sequence
        pass
    if vals is None or None in vals:
        raise TypeError(f"window_size must be two integers (left, right), got {window_size!r}")
    if any(w < -1 for w in vals):
        raise ValueError(f"window_size values must be >= 0, or -1 for unbounded, got {tuple(vals)}")
    return vals[0], vals[1]


def alibi(alibi_slopes, batch: int, heads: int, device) -> Optional[torch.Tensor]:
    """ALiBi slopes: None, or float32 (heads,) or (batch, heads) on q's device; returned contiguous."""
    if alibi_slopes is None:
        return None
    tensor("alibi_slopes", alibi_slopes)
    if alibi_slopes.dtype != torch.float32:
        raise TypeError(f"alibi_slopes must be float32, got {alibi_slopes.dtype}")
    if tuple(alibi_slopes.shape) not in ((heads,), (batch, heads)):
        raise ValueError(f"alibi_slopes must have shape ({heads},) or ({batch}, {heads}), "
                         f"got {tuple(alibi_slopes.shape)}")
    if alibi_slopes.device != device:
        raise ValueError(f"alibi_slopes must be on {device} like q, got {alibi_slopes.device}")
    return alibi_slopes.contiguous()
