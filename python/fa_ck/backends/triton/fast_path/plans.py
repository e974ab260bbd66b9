"""Plans: the launches of a call signature's slow path, recorded and replayed.

A call's slow path works out its kernels, configs, grids, constexprs and scalar arguments from its
signature (plan_key), which costs more host time than a short call's kernels take on the GPU. So
the slow path's steps are noted down (Recording) as a Plan, and a later call of the same signature
only allocates its outputs and launches the same kernels with the same arguments, its own tensors
(and host-made descriptors of them) in place of the first call's.
"""
from __future__ import annotations

import os
import struct
import threading
import warnings

import torch
import triton

from .. import buffers, device
from triton.runtime import driver as triton_driver

from . import driver, keyed
from .slots import Part, TensorDescriptor, nbytes, rebased, slot_offset, tensor_at

try:                      # where Triton keeps its allocator (see tma_allocator)
    from triton.runtime import _allocation
except ImportError:
    _allocation = None

_PLANS: dict = {}
_MAX_PLANS = 1024          # a model has a few signatures; a sweep over many may refill it
_FLOATS = struct.Struct("=3d")
SET_TMA_ALLOCATOR = "tma_allocator()"      # a step of a plan besides its launches
_recording = threading.local()             # .steps: the list a call being recorded notes into


def plan_key(kind: str, p, poison: bool, inputs, outputs, *extra):
    """Everything a call's slow path decides from, or None for calls that always take it: its input
    tensors (shape, strides, dtype, 16-byte alignment, and which of them are one and the same), the
    alignment of its fresh outputs, its scalar parameters (floats by their bits: -0.0 is not 0.0),
    the device and its architecture, and the environment read per call (FA_CK_TRITON_CONFIG,
    FA_CK_POISON). Always slow: calls with tensors among their parameters (ALiBi slopes, dropout's
    RNG state, varlen's cu_seqlens; fp8 descales that are not among `inputs`) and fp8 under the
    interpreter (quantising ends in a torch copy there, not a launch)."""
    if ((p.fp8 and device.INTERPRET) or p.alibi_slopes is not None or p.rng is not None
            or p.cu_seqlens_q is not None or p.cu_seqlens_k is not None
            or any(d is not None and not any(d is t for t in inputs) for d in (p.q_descale, p.k_descale, p.v_descale))
            or not (type(p.scale) is type(p.softcap) is type(p.dropout_p) is float)):
        return None
    dev = inputs[0].device
    ids = [id(t) for t in inputs]
    return (kind, dev, device.arch(dev), device.INTERPRET, poison, os.environ.get("FA_CK_TRITON_CONFIG", ""),
            *[(t.shape, t.stride(), t.dtype, t.data_ptr() % 16 == 0) for t in inputs],
            *[t.data_ptr() % 16 == 0 for t in outputs],
            None if len(set(ids)) == len(ids) else tuple(map(ids.index, ids)),
            _FLOATS.pack(p.scale, p.softcap, p.dropout_p), p.causal, p.window_left, p.window_right,
            p.deterministic, p.max_seqlen_q, p.max_seqlen_k, p.out_dtype, p.fp8, *extra)


def find(key):
    return _PLANS.get(key)


def clear():
    _PLANS.clear()


def note(step):
    """Note a step of the slow path down, when a plan is being recorded in this thread."""
    steps = getattr(_recording, "steps", None)
    if steps is not None:
        steps.append(step)


def zero_now(t: torch.Tensor):
    """t.zero_() (t contiguous), noted down: a replay zeroes the same bytes of its own slot."""
    note((zero_now, t))
    t.zero_()


def tma_allocator():
    """Device-made TMA descriptors live in global scratch that Triton asks an allocator for: set one
    where none is set. A context variable, so the autograd thread needs it too: called before every
    launch that builds descriptors on the device."""
    note(SET_TMA_ALLOCATOR)
    try:
        unset = isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
    except AttributeError:                   # a Triton that keeps it elsewhere: set ours
        unset = True
    if unset:
        triton.set_allocator(_scratch)


_SCRATCH: dict = {}


def _scratch(size: int, alignment: int, stream):
    """One scratch buffer per stream, grown as needed and reused (a stream's launches run in order),
    instead of an allocation per launch."""
    if device.INTERPRET or torch.cuda.is_current_stream_capturing():
        # (a CUDA graph keeps the addresses it captured: a buffer regrown later would be freed)
        return torch.empty(size, dtype=torch.int8, device="cpu" if device.INTERPRET else "cuda")
    key = (torch.cuda.current_device(), stream)
    buf = _SCRATCH.get(key)
    if buf is None or buf.numel() < size:
        buf = _SCRATCH[key] = torch.empty(max(size, 1 << 20), dtype=torch.int8, device="cuda")
    return buf


class Recording:
    """`with Recording(key) as rec: <slow path>; rec.save(slots)` keeps what the slow path launched
    as the Plan for `key` (nothing when key is None, or when the slow path raised)."""

    def __init__(self, key):
        self.key = key

    def __enter__(self):
        _recording.steps = [] if self.key is not None else None
        return self

    def __exit__(self, *exc):
        _recording.steps = None

    def save(self, slots, one_pass: bool = False):
        steps = _recording.steps
        plan = Plan.make(steps, slots, one_pass) if steps is not None else None
        if plan is not None:
            if len(_PLANS) >= _MAX_PLANS:
                _PLANS.clear()
            _PLANS[self.key] = plan


class Plan:
    """The steps of a call signature's slow path: its launches (kernel, grid, constexprs; the
    arguments with the call's tensors, and host-made descriptors of them, replaced by their place
    among the call's `slots`), where it set the TMA allocator and the bytes it zeroed.
    one_pass: the backward's dK/dV kernel added dQ into an fp32 buffer, the last slot, which the
    caller makes. slot_bytes: {slot: bytes} of each slot that parts are taken from (a replay makes
    it at that size: the fp8 forward's workspace)."""

    def __init__(self, steps: list, one_pass: bool, slot_bytes: dict | None = None):
        self.steps, self.one_pass, self.slot_bytes = steps, one_pass, slot_bytes or {}
        # each launch's compiled kernel once a replay has had it from keyed.launch (the key holds all
        # Triton specialises on), and its driver launch (None: not tried yet, False: not possible)
        self.compiled = [None] * len(steps)
        self.direct = [None] * len(steps)

    @classmethod
    def make(cls, steps: list, slots, one_pass: bool):
        """The plan, or None when a launch took (or the slow path zeroed) a tensor that is neither a
        slot, nor one of the device's placeholders, nor inside the bytes of a slot that is contiguous
        and shares its storage with no other slot (a tensor a replay could not supply)."""
        where = {id(t): i for i, t in enumerate(slots) if t is not None}
        constants = buffers.placeholders(slots[0].device)
        storages = [t.untyped_storage().data_ptr() if t is not None else None for t in slots]
        alone = {ptr: i for i, (t, ptr) in enumerate(zip(slots, storages))
                 if ptr and storages.count(ptr) == 1 and t.is_contiguous()}
        slot_bytes = {}

        def locate(t):
            slot = where.get(id(t))
            if slot is not None:
                return slot
            slot = alone.get(t.untyped_storage().data_ptr())
            if slot is None:
                return None
            start = t.untyped_storage().data_ptr() + t.storage_offset() * t.element_size()
            offset, size = start - slots[slot].data_ptr(), nbytes(slots[slot])
            if offset < 0 or offset + nbytes(t) > size:
                return None
            slot_bytes[slot] = size
            return Part(slot, offset, tuple(t.shape), t.stride(), t.dtype)

        plan = []
        for step in steps:
            if step is SET_TMA_ALLOCATOR:
                plan.append(step)
                continue
            if step[0] is zero_now:
                zeroed = step[1]
                place = locate(zeroed) if zeroed.is_contiguous() else None
                if place is None:
                    return None
                plan.append((zero_now, place, nbytes(zeroed)))
                continue
            kernel, grid, args, constexprs = step
            fixed, subs = list(args), []
            for pos, arg in enumerate(args):
                if isinstance(arg, torch.Tensor):
                    base, desc = arg, None
                elif TensorDescriptor is not None and isinstance(arg, TensorDescriptor):
                    base, desc = arg.base, rebased(arg, None)   # (the plan keeps no tensor of the call alive)
                elif isinstance(arg, tuple) and any(hasattr(x, "data_ptr") or hasattr(x, "base") for x in arg):
                    return None                        # (a tensor inside a tuple: no slot a replay fills)
                else:
                    continue
                place = locate(base)
                if place is None:
                    if desc is None and any(base is c for c in constants):
                        continue
                    return None
                fixed[pos] = None
                subs.append((pos, place, desc))
            plan.append((kernel, grid, tuple(fixed), tuple(subs), constexprs))
        return cls(plan, one_pass, slot_bytes)

    def replay(self, slots, start: int = 0, stop: int | None = None):
        """Make steps[start:stop] again, on these slots."""
        stop = len(self.steps) if stop is None else stop
        stream = None
        to_driver = driver.hooks_unset()
        for i in range(start, stop):
            step = self.steps[i]
            if step is SET_TMA_ALLOCATOR:
                tma_allocator()
                continue
            if step[0] is zero_now:
                _, place, n = step
                slot, offset = slot_offset(place)
                if to_driver and slots[slot].is_cuda and driver.loaded():
                    if stream is None:
                        stream = triton_driver.active.get_current_stream(triton_driver.active.get_current_device())
                    if driver.zero(slots[slot].data_ptr() + offset, n, stream) == 0:
                        continue
                tensor_at(slots, place).zero_()       # (no libcuda, a CPU tensor, or the memset failed)
                continue
            kernel, grid, fixed, subs, constexprs = step
            if to_driver and self.compiled[i] is not None:
                if self._direct(i, kernel, grid, fixed, subs, constexprs, slots):
                    if stream is None:
                        stream = triton_driver.active.get_current_stream(triton_driver.active.get_current_device())
                    err = self.direct[i](slots, stream)
                    if err == 0:
                        continue
                    if err != driver.CUDA_ERROR_INVALID_CONTEXT:
                        self.direct[i] = False         # Triton's launcher from now on (it raises what failed)
            args = list(fixed)
            for pos, place, desc in subs:
                tensor = tensor_at(slots, place)
                args[pos] = tensor if desc is None else rebased(desc, tensor)
            self.compiled[i] = keyed.launch(kernel, grid, tuple(args), constexprs, self.compiled[i])

    def _direct(self, i, kernel, grid, fixed, subs, constexprs, slots) -> bool:
        """Whether step i launches through the driver (laid out on its first replay there)."""
        if self.direct[i] is None:
            try:
                self.direct[i] = driver.DirectLaunch.make(self.compiled[i], kernel, grid, fixed, subs, constexprs,
                                                          slots) or False
            except Exception as e:             # (an unforeseen Triton: its launcher, as before)
                warnings.warn(f"fa_ck: launching straight to the driver failed ({type(e).__name__}: {e}); "
                              "this launch keeps Triton's launcher", RuntimeWarning, stacklevel=3)
                self.direct[i] = False
        return bool(self.direct[i])
