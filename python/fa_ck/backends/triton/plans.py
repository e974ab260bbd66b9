"""Every launch of the triton backend goes through here (_launch, _tma_allocator), on to
launch.py, and is noted down for the call's replay plan. A call's slow path works out its
kernels, configs, grids, constexprs and scalar arguments from its signature (_plan_key): that
took most of the ~100 us of Python host time an attention call cost on top of its launches,
while the kernels of a short call run for ~200 us (B16 S1024 H16 d128 on the H200). So the slow
path's launches are noted down (_Recording) as a _Plan, and a later call of the same signature
only allocates its outputs, makes its host-made descriptors and launches the same kernels with
the same arguments, its own tensors in place of the first call's.

A launch may also take a part of a slot (_Part: a view inside a workspace, by byte offset), and
a plan may zero bytes of a slot (_zero): the fp8 forward's quantisation buffers are parts of one
workspace, made per call, as every tensor made cost host time on the H200's host (a view 6 us,
torch.zeros 12 us: the 14 tensors of quantize.fp8_buffers were 107 us of a 313 us replayed fp8
call, bench/results/h200-20261203-timeline call 3), where a replay makes the workspace alone.
"""
from __future__ import annotations

import os
import struct
import threading
from typing import NamedTuple

import torch
import triton

from ...params import AttnParams
from . import configs, driver_launch, tuning
from .host import _placeholders
from .launch import driver, launch, run_compiled

try:                      # where Triton keeps its allocator (see _tma_allocator)
    from triton.runtime import _allocation
except ImportError:
    _allocation = None
try:                      # host-made descriptors among a plan's arguments (launch_gluon.py makes them)
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
except Exception:         # a Triton without Gluon's Hopper API: no call makes one
    TensorDescriptor = None

_PLANS: dict = {}
_MAX_PLANS = 1024          # a model has a few signatures; a sweep over many may refill it
_FLOATS = struct.Struct("=3d")
_SET_TMA_ALLOCATOR = "_tma_allocator()"   # a step of a plan besides its launches
_recording = threading.local()             # .steps: the list a call being recorded notes into


def _plan_key(kind: str, p: AttnParams, poison: bool, inputs, outputs, *extra):
    """Everything a call's slow path decides from, or None for calls that always take it: its
    input tensors (shape, strides, dtype, 16-byte alignment of the data pointer, which _tma_ok
    checks, and which of them are one and the same tensor), the alignment of its fresh outputs
    (their shapes, strides and dtypes follow from the inputs and FA_CK_POISON), its scalar
    parameters (the floats by their bits: -0.0 is not 0.0), the device and its architecture,
    the interpreter switch and the environment switches read per call (FA_CK_TRITON_CONFIG,
    FA_CK_POISON). Always slow: calls with tensors among their parameters (ALiBi slopes,
    dropout's RNG state, varlen's cu_seqlens: a plan would have to key or carry them; fp8 inputs'
    descales where they are not among `inputs`), fp8 under the interpreter
    (quantising ends in a torch copy there, not a launch) and autotune (a search may run;
    _config does not remember its answer either). fp8 of 16-bit inputs replays: what quantising
    writes lies in one workspace, a slot after the outputs made per call (the slow path's by
    _launch_forward once it has decided, a replay's at the size its plan recorded), left out of
    the key: a fresh allocation, 16-byte aligned, and its parts at 256-byte offsets. So do fp8
    inputs with their descales (slots after the workspace; ones kept for any that did not come,
    quantize.with_unit_descales), the copy of v in the kernel's key order being the workspace."""
    if ((p.fp8 and configs.INTERPRET) or p.alibi_slopes is not None or p.rng is not None or p.cu_seqlens_q is not None
            or p.cu_seqlens_k is not None
            or any(d is not None and not any(d is t for t in inputs) for d in (p.q_descale, p.k_descale, p.v_descale))
            or not (type(p.scale) is type(p.softcap) is type(p.dropout_p) is float)
            or tuning.autotune_enabled()):
        return None
    device = inputs[0].device
    ids = [id(t) for t in inputs]
    return (kind, device, configs.arch(device), configs.INTERPRET, poison, os.environ.get("FA_CK_TRITON_CONFIG", ""),
            *[(t.shape, t.stride(), t.dtype, t.data_ptr() % 16 == 0) for t in inputs],
            *[t.data_ptr() % 16 == 0 for t in outputs],
            None if len(set(ids)) == len(ids) else tuple(map(ids.index, ids)),
            _FLOATS.pack(p.scale, p.softcap, p.dropout_p), p.causal, p.window_left, p.window_right,
            p.deterministic, p.max_seqlen_q, p.max_seqlen_k, p.out_dtype, p.fp8, *extra)


def _note(step):
    """Note a step of the slow path down, when a plan is being recorded in this thread."""
    steps = getattr(_recording, "steps", None)
    if steps is not None:
        steps.append(step)


def _launch(kernel, grid: tuple, args: tuple, constexprs: dict):
    """launch(), as the slow path calls it: noted down for the call's plan."""
    _note((kernel, grid, args, constexprs))
    launch(kernel, grid, args, constexprs)


def _zero(t: torch.Tensor):
    """t.zero_() (t contiguous), as the slow path calls it: noted down for the call's plan, whose
    replay zeroes the same bytes of its own slot (a memset on the stream, no tensor made)."""
    _note((_zero, t))
    t.zero_()


def _tma_allocator():
    """Device-side TMA descriptors live in global scratch that Triton asks an allocator for; set
    one (torch's caching allocator) where none is set. It is a context variable, so the autograd
    thread and others need it too: called before every launch that builds descriptors."""
    _note(_SET_TMA_ALLOCATOR)
    try:
        unset = isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
    except AttributeError:                   # a Triton that keeps it elsewhere: set ours
        unset = True
    if unset:
        triton.set_allocator(_scratch)


_SCRATCH: dict = {}


def _scratch(size: int, alignment: int, stream):
    """Global scratch for a launch's device-side TMA descriptors: one buffer per stream, grown
    as needed and reused (the launches of a stream run in order, and each needs it only while it
    runs), instead of an allocation per launch on the host's critical path."""
    if configs.INTERPRET or torch.cuda.is_current_stream_capturing():
        # (a CUDA graph keeps the addresses it captured: a buffer regrown later would be freed)
        return torch.empty(size, dtype=torch.int8, device="cpu" if configs.INTERPRET else "cuda")
    key = (torch.cuda.current_device(), stream)
    buf = _SCRATCH.get(key)
    if buf is None or buf.numel() < size:
        buf = _SCRATCH[key] = torch.empty(max(size, 1 << 20), dtype=torch.int8, device="cuda")
    return buf


class _Recording:
    """`with _Recording(key) as rec: <slow path>; rec.save(slots)` keeps what the slow path
    launched as the _Plan for `key` (nothing when key is None, or when the slow path raised)."""

    def __init__(self, key):
        self.key = key

    def __enter__(self):
        _recording.steps = [] if self.key is not None else None
        return self

    def __exit__(self, *exc):
        _recording.steps = None

    def save(self, slots, one_pass: bool = False):
        steps = _recording.steps
        plan = _Plan.make(steps, slots, one_pass) if steps is not None else None
        if plan is not None:
            if len(_PLANS) >= _MAX_PLANS:
                _PLANS.clear()
            _PLANS[self.key] = plan


class _Part(NamedTuple):
    """A tensor inside a slot's bytes, where a plan names it: `offset` bytes from the slot's data
    pointer; its shape, strides and dtype rebuild it on Triton's path (_tensor), while the driver's
    takes the pointer alone (driver_launch)."""
    slot: int
    offset: int
    shape: tuple
    strides: tuple
    dtype: torch.dtype


def _slot_offset(where) -> tuple:
    """(slot, byte offset) of a plan's reference: a slot's index, or a _Part of one."""
    return (where, 0) if type(where) is int else (where.slot, where.offset)


def _tensor(slots, where) -> torch.Tensor:
    """The tensor `where` names in this call's slots: the slot, or the _Part rebuilt over its storage."""
    if type(where) is int:
        return slots[where]
    slot = slots[where.slot]
    start = slot.storage_offset() * slot.element_size() + where.offset        # (bytes into the storage)
    return torch.empty(0, dtype=where.dtype, device=slot.device).set_(
        slot.untyped_storage(), start // where.dtype.itemsize, where.shape, where.strides)


def _nbytes(t: torch.Tensor) -> int:
    """The bytes from t's data pointer to past its last element (strides are never negative)."""
    if not t.numel():
        return 0
    return (1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))) * t.element_size()


class _Plan:
    """The steps of a call signature's slow path: its launches (kernel, grid and constexprs as
    they were; the arguments with the call's own tensors, and host-made descriptors of them,
    replaced by their place among the call's `slots`: a slot's index, or a _Part of one), where
    it set the TMA allocator and the bytes it zeroed ((_zero, slot or _Part, bytes)).
    one_pass: the backward's dK/dV kernel added dQ into an fp32 buffer (the last slot), which
    the caller makes (__init__._backward: the slow path's from _dq_accumulator, a replay's carved
    from its temporaries; the replayed bwd_preprocess zeroes it) and a replayed dq_from_acc
    scales into dq. slot_bytes: {slot: its size in bytes} of each slot that parts are taken
    from (a replay makes it, the fp8 forward's workspace, at that size)."""

    def __init__(self, steps: list, one_pass: bool, slot_bytes: dict | None = None):
        self.steps, self.one_pass, self.slot_bytes = steps, one_pass, slot_bytes or {}
        # each launch's compiled kernel, once a replay has had it from launch(): the plan's key
        # holds everything Triton specialises the arguments on (shapes, strides, dtypes,
        # alignment), so later replays hand their arguments straight to it (run_compiled), or
        # straight to the driver (driver_launch: None not tried yet, False not possible)
        self.compiled = [None] * len(steps)
        self.direct = [None] * len(steps)

    @classmethod
    def make(cls, steps: list, slots, one_pass: bool):
        """The plan, or None when a launch took (or the slow path zeroed) a tensor that is neither a
        slot, nor one of the device's placeholders, nor inside the bytes of a slot that is contiguous
        and shares its storage with no other slot (a tensor of this call alone that a replay could
        not supply; a view of an input sharing storage with another one could lie elsewhere next time)."""
        where = {id(t): i for i, t in enumerate(slots) if t is not None}
        constants = _placeholders(slots[0].device)
        storages = [t.untyped_storage().data_ptr() if t is not None else None for t in slots]
        alone = {ptr: i for i, (t, ptr) in enumerate(zip(slots, storages))
                 if ptr and storages.count(ptr) == 1 and t.is_contiguous()}
        slot_bytes = {}

        def locate(t):
            """t's place among the slots: a slot's index, a _Part of one, or None."""
            slot = where.get(id(t))
            if slot is not None:
                return slot
            slot = alone.get(t.untyped_storage().data_ptr())
            if slot is None:
                return None
            # (from the storage's start: an empty tensor's data_ptr() is 0)
            start = t.untyped_storage().data_ptr() + t.storage_offset() * t.element_size()
            offset, size = start - slots[slot].data_ptr(), _nbytes(slots[slot])
            if offset < 0 or offset + _nbytes(t) > size:
                return None
            slot_bytes[slot] = size
            return _Part(slot, offset, tuple(t.shape), t.stride(), t.dtype)

        plan = []
        for step in steps:
            if step is _SET_TMA_ALLOCATOR:
                plan.append(step)
                continue
            if step[0] is _zero:
                zeroed = step[1]
                place = locate(zeroed) if zeroed.is_contiguous() else None
                if place is None:
                    return None
                plan.append((_zero, place, _nbytes(zeroed)))
                continue
            kernel, grid, args, constexprs = step
            fixed, subs = list(args), []
            for pos, arg in enumerate(args):
                if isinstance(arg, torch.Tensor):
                    base, desc = arg, None
                elif TensorDescriptor is not None and isinstance(arg, TensorDescriptor):
                    base, desc = arg.base, _rebased(arg, None)   # (the plan keeps no tensor of the call alive)
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
        to_driver = driver_launch.enabled() and driver_launch.hooks_unset()
        for i in range(start, stop):
            step = self.steps[i]
            if step is _SET_TMA_ALLOCATOR:
                _tma_allocator()
                continue
            if step[0] is _zero:
                _, place, nbytes = step
                slot, offset = _slot_offset(place)
                if to_driver and slots[slot].is_cuda and driver_launch.loaded():
                    if stream is None:
                        stream = driver.active.get_current_stream(driver.active.get_current_device())
                    if driver_launch.zero(slots[slot].data_ptr() + offset, nbytes, stream) == 0:
                        continue
                _tensor(slots, place).zero_()          # (no libcuda, a CPU tensor, or the memset failed)
                continue
            kernel, grid, fixed, subs, constexprs = step
            if to_driver and self.compiled[i] is not None:
                fast = self.direct[i]
                if fast is None:
                    try:
                        fast = driver_launch.DirectLaunch.make(self.compiled[i], kernel, grid, fixed, subs,
                                                               constexprs, slots) or False
                    except Exception:                  # (anything unforeseen: Triton's launcher, as before)
                        fast = False
                    self.direct[i] = fast
                if fast:
                    if stream is None:
                        stream = driver.active.get_current_stream(driver.active.get_current_device())
                    err = fast(slots, stream)
                    if err == 0:
                        continue
                    if err != driver_launch.CUDA_ERROR_INVALID_CONTEXT:
                        self.direct[i] = False         # Triton's launcher from now on (it raises what failed)
                    # (no current context on this thread: Triton's launcher makes one current)
            args = list(fixed)
            for pos, place, desc in subs:
                tensor = _tensor(slots, place)
                args[pos] = tensor if desc is None else _rebased(desc, tensor)
            if self.compiled[i] is None:
                self.compiled[i] = launch(kernel, grid, tuple(args), constexprs)
            else:
                run_compiled(self.compiled[i], kernel, grid, tuple(args), constexprs)


def _rebased(desc, base):
    """A host-made descriptor like `desc` (shape, strides, block, layout: the signature's) of `base`."""
    new = object.__new__(TensorDescriptor)
    new.__dict__.update(desc.__dict__)
    new.base = base
    return new
