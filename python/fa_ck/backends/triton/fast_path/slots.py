"""Where a recorded launch's tensors come from in a later call: its slots (the call's inputs,
outputs and workspaces, by index) or a part of one (a view inside a slot's bytes, by offset)."""
from __future__ import annotations

from typing import NamedTuple

import torch

try:                      # host-made descriptors among a plan's arguments (gluon_launch.py makes them)
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
except Exception:         # a Triton without Gluon's Hopper API: no call makes one
    TensorDescriptor = None


class Part(NamedTuple):
    """A tensor `offset` bytes into a slot's data; its shape, strides and dtype rebuild it on
    Triton's launch path, while the driver's takes the pointer alone."""
    slot: int
    offset: int
    shape: tuple
    strides: tuple
    dtype: torch.dtype


def slot_offset(where) -> tuple:
    """(slot, byte offset) of a place: a slot's index, or a Part of one."""
    return (where, 0) if type(where) is int else (where.slot, where.offset)


def tensor_at(slots, where) -> torch.Tensor:
    """The tensor a place names among this call's slots."""
    if type(where) is int:
        return slots[where]
    slot = slots[where.slot]
    start = slot.storage_offset() * slot.element_size() + where.offset        # (bytes into the storage)
    return torch.empty(0, dtype=where.dtype, device=slot.device).set_(
        slot.untyped_storage(), start // where.dtype.itemsize, where.shape, where.strides)


def nbytes(t: torch.Tensor) -> int:
    """The bytes from t's data pointer to past its last element (strides are never negative)."""
    if not t.numel():
        return 0
    return (1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))) * t.element_size()


def rebased(desc, base):
    """A host-made descriptor like `desc` (shape, strides, block, layout) over `base`."""
    new = object.__new__(TensorDescriptor)
    new.__dict__.update(desc.__dict__)
    new.base = base
    return new
