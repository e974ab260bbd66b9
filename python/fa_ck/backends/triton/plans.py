"""Every launch of the triton backend goes through here (_launch, _tma_allocator), on to
launch.py, and is noted down for the call's replay plan. A call's slow path works out its
kernels, configs, grids, constexprs and scalar arguments from its signature (_plan_key): that
took most of the ~100 us of Python host time an attention call cost on top of its launches,
while the kernels of a short call run for ~200 us (B16 S1024 H16 d128 on the H200). So the slow
path's launches are noted down (_Recording) as a _Plan, and a later call of the same signature
only allocates its outputs, makes its host-made descriptors and launches the same kernels with
the same arguments, its own tensors in place of the first call's.
"""
from __future__ import annotations

import os
import struct
import threading

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
    dropout's RNG state, varlen's cu_seqlens, fp8 inputs' descales: a plan would have to key or
    carry them), fp8 under the interpreter (quantising ends in a torch copy there, not a launch)
    and autotune (a search may run; _config does not remember its answer either). fp8 of 16-bit
    inputs replays: what quantising writes are slots after the outputs, made per call (the slow
    path's by _launch_forward once it has decided, a replay's those its plan reads), left out of
    the key: fresh allocations, 16-byte aligned, and views of them at 16-byte offsets."""
    if ((p.fp8 and configs.INTERPRET) or p.alibi_slopes is not None or p.rng is not None or p.cu_seqlens_q is not None
            or p.cu_seqlens_k is not None or p.q_descale is not None or p.k_descale is not None
            or p.v_descale is not None or not (type(p.scale) is type(p.softcap) is type(p.dropout_p) is float)
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


class _Plan:
    """The steps of a call signature's slow path: its launches (kernel, grid and constexprs as
    they were; the arguments with the call's own tensors, and host-made descriptors of them,
    replaced by their place among the call's `slots`) and where it set the TMA allocator.
    one_pass: the backward's dK/dV kernel added dQ into an fp32 buffer (the last slot), which
    the caller makes (__init__._backward: the slow path's from _dq_accumulator, a replay's carved
    from its temporaries; the replayed bwd_preprocess zeroes it) and a replayed dq_from_acc
    scales into dq. slots_read: the slots its launches take (a replay makes only those of a
    call's optional buffers: the fp8 forward's q8)."""

    def __init__(self, steps: list, one_pass: bool):
        self.steps, self.one_pass = steps, one_pass
        # each launch's compiled kernel, once a replay has had it from launch(): the plan's key
        # holds everything Triton specialises the arguments on (shapes, strides, dtypes,
        # alignment), so later replays hand their arguments straight to it (run_compiled), or
        # straight to the driver (driver_launch: None not tried yet, False not possible)
        self.compiled = [None] * len(steps)
        self.direct = [None] * len(steps)
        self.slots_read = {slot for step in steps if step is not _SET_TMA_ALLOCATOR for _, slot, _ in step[3]}

    @classmethod
    def make(cls, steps: list, slots, one_pass: bool):
        """The plan, or None when a launch took a tensor that is neither a slot nor one of the
        device's placeholders (a tensor of this call alone that a replay could not supply)."""
        where = {id(t): i for i, t in enumerate(slots) if t is not None}
        constants = _placeholders(slots[0].device)
        plan = []
        for step in steps:
            if step is _SET_TMA_ALLOCATOR:
                plan.append(step)
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
                slot = where.get(id(base))
                if slot is None:
                    if desc is None and any(base is c for c in constants):
                        continue
                    return None
                fixed[pos] = None
                subs.append((pos, slot, desc))
            plan.append((kernel, grid, tuple(fixed), tuple(subs), constexprs))
        return cls(plan, one_pass)

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
            for pos, slot, desc in subs:
                args[pos] = slots[slot] if desc is None else _rebased(desc, slots[slot])
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
