"""The host fast path: a repeated call replays its launches.

Every launch of the triton backend, and the other steps a call makes on the device (zeroing a
buffer, setting Triton's TMA allocator), go through here. With the fast path on (the default;
FA_CK_FAST_PATH=0 turns it off):

- a call whose signature (plan_key) has no plan yet records its slow path's steps (Recording);
  a later call of the same signature replays them on its own tensors (plans.py), with no config
  worked out and no argument built again;
- launches are keyed by Triton's own specialisation of their arguments and go straight to the
  compiled kernel (keyed.py), and a replayed launch from its second replay on straight to the CUDA
  driver (driver.py).

Contract: a replay launches exactly what the slow path launched (the same kernels, grids,
constexprs and scalars, on the call's own tensors), because plan_key holds everything the slow
path decides from; anything a replay could not supply makes the call unrecordable, so it keeps the
slow path. Off, every launch is kernel[grid](...) and nothing is recorded. Where Triton lacks or has
changed what a piece relies on, that piece warns once and falls back to Triton's launcher.
docs/architecture.md ("The host fast path") says where this pays.
"""
from __future__ import annotations

import os

from . import keyed, plans
from .plans import Recording, clear, find, tma_allocator, zero_now

__all__ = ["enabled", "launch", "plan_key", "find", "clear", "Recording", "tma_allocator", "zero"]


def enabled() -> bool:
    """FA_CK_FAST_PATH (read per call; default on)."""
    return os.environ.get("FA_CK_FAST_PATH", "1") != "0"


def launch(kernel, grid: tuple, args: tuple, constexprs: dict) -> None:
    """kernel[grid](*args, **constexprs): `args` the leading parameters, positionally, `constexprs`
    the rest by name. Noted down when a plan is being recorded."""
    plans.note((kernel, grid, args, constexprs))
    if enabled():
        keyed.launch(kernel, grid, args, constexprs)
    else:
        kernel[grid](*args, **constexprs)


def zero(t) -> None:
    """t.zero_() for a contiguous t, noted down when a plan is being recorded."""
    zero_now(t)


def plan_key(kind: str, p, poison: bool, inputs, outputs, *extra):
    """The call's plan key, or None when it takes the slow path (fast path off, or a call a plan
    cannot replay: see plans.plan_key)."""
    return plans.plan_key(kind, p, poison, inputs, outputs, *extra) if enabled() else None
