"""A replayed launch straight to the CUDA driver (cuLaunchKernel through ctypes).

A replayed plan (plans.py) launches kernels whose specialisation, grid, scalars and constexprs are
all fixed: only the call's own tensors change. Triton's launcher still does a launch's whole host
side each time (argument tuple, launch metadata, its C launcher's parsing, a pointer query per
tensor, a fresh tensor map per host-made descriptor). Here each launch of a plan is laid out once
as the kernel's parameter buffer, in Triton's own layout read from the compiled kernel (its
signature without constexprs, a host-made descriptor as the tensor map with its shape as int32s
and strides as int64s, then the global and profile scratch pointers); per call only the slots'
pointers are patched in and each tensor map's address swapped by cuTensorMapReplaceAddress. A
plan's zeroing goes here too, as cuMemsetD8Async on the stream.

A tuple argument (a tensor's strides, a few scalars) is laid out item by item, as Triton's launcher
flattens it. Where anything is out of the ordinary (not NVIDIA, no libcuda, a launch hook set, fp16
scalars, a pointer or descriptor inside a tuple, a descriptor Triton did not lower to a tensor map,
clusters, PDL, profile scratch) DirectLaunch.make returns None and the plan keeps Triton's launcher.
"""
from __future__ import annotations

import ctypes
import math
import threading
import warnings

from .slots import rebased, slot_offset, tensor_at

try:
    from triton import knobs
    from triton.backends.nvidia.driver import make_tensordesc_arg
    from triton.runtime import _allocation
    _MISSING = ""
except Exception as e:   # another Triton, or one without NVIDIA's driver module: Triton's launcher always
    knobs = _allocation = make_tensordesc_arg = None
    _MISSING = f"{type(e).__name__}: {e}"
_WARNED: list = []

_C = {"*": ctypes.c_uint64, "i1": ctypes.c_int8, "i8": ctypes.c_int8, "i16": ctypes.c_int16,
      "i32": ctypes.c_int32, "i64": ctypes.c_int64, "u1": ctypes.c_uint8, "u8": ctypes.c_uint8,
      "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "fp32": ctypes.c_float,
      "f32": ctypes.c_float, "fp64": ctypes.c_double}
_TENSOR_MAP_BYTES = 128
CUDA_ERROR_INVALID_CONTEXT = 201
_cuda = None              # libcuda, once loaded (False: not loadable here)


class TensorMap(ctypes.Structure):
    """A CUtensorMap: 128 opaque bytes, 128-byte aligned as CUDA 13's cuda.h declares it (the
    driver asks 64); ctypes aligns a structure to its largest member's alignment only, so the
    buffer is over-allocated and an aligned address taken."""
    _fields_ = [("raw", ctypes.c_uint8 * (2 * _TENSOR_MAP_BYTES))]


def _lib():
    global _cuda
    if _cuda is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            lib.cuLaunchKernel.argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.c_void_p]
            lib.cuTensorMapReplaceAddress.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            lib.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
            _cuda = lib
        except (OSError, AttributeError):
            _cuda = False
    return _cuda or None


def loaded() -> bool:
    """Whether libcuda is here to launch and zero through."""
    return _lib() is not None


def zero(ptr: int, nbytes: int, stream: int) -> int:
    """nbytes of device memory from ptr zeroed on `stream` (queued, as a kernel is) -> the CUresult."""
    return _lib().cuMemsetD8Async(ptr, 0, nbytes, stream)


def _no_hook(hook) -> bool:
    return hook is None or (type(hook).__name__ == "HookChain" and not hook.calls)


def hooks_unset() -> bool:
    """Whether replays may go straight to the driver: no Triton launch hook is set (one would be
    skipped), and this Triton has what the direct path reads (else it warns once, where there is a
    CUDA driver to launch through)."""
    if _MISSING:
        if not _WARNED and _lib() is not None:
            _WARNED.append(True)
            warnings.warn(f"fa_ck: this Triton lacks what launching straight to the driver relies on ({_MISSING}); "
                          "replays keep Triton's launcher", RuntimeWarning, stacklevel=3)
        return False
    return _no_hook(knobs.runtime.launch_enter_hook) and _no_hook(knobs.runtime.launch_exit_hook)


def _copy_tensor_map(cu_map):
    """Triton's tensor map object (PyCUtensorMap, Triton 3.6 and 3.7: the map is the object's last
    128 bytes) copied into a TensorMap of ours -> (buffer, its aligned address), or None for
    another kind of object (make() then checks the copy: replacing its address by the same one
    must change nothing)."""
    kind = type(cu_map)
    size = kind.__basicsize__
    if kind.__name__ != "PyCUtensorMap" or kind.__itemsize__ or size < _TENSOR_MAP_BYTES + 16:
        return None
    src = id(cu_map) + size - _TENSOR_MAP_BYTES
    buf = TensorMap()
    addr = (ctypes.addressof(buf) + _TENSOR_MAP_BYTES - 1) // _TENSOR_MAP_BYTES * _TENSOR_MAP_BYTES
    ctypes.memmove(addr, src, _TENSOR_MAP_BYTES)
    return buf, addr


def flat_scalars(ty: tuple, value: tuple) -> list | None:
    """A tuple argument's items as ctypes values, constexpr items left out (as Triton's launcher
    flattens it); None where an item is not a plain int or float scalar."""
    if not isinstance(value, tuple) or len(ty) != len(value):
        return None
    out = []
    for t, v in zip(ty, value):
        if isinstance(t, tuple):
            inner = flat_scalars(t, v)
            if inner is None:
                return None
            out += inner
        elif t != "constexpr":
            c_type = _C.get(t)
            if c_type is None or t.startswith("*") or not isinstance(v, (int, float)):
                return None
            out.append(c_type(v))
    return out


class DirectLaunch:
    """One launch of a plan, laid out for cuLaunchKernel: call(slots, stream) patches the slots'
    pointers in (each plus its part's byte offset) and launches."""

    def __init__(self, lib, function, grid, block, shared, params, keep, patches, maps, scratch):
        self.lib, self.function, self.grid, self.block, self.shared = lib, function, grid, block, shared
        self.params, self.keep = params, keep          # keep: the ctypes values params points into
        self.patches, self.maps, self.scratch = patches, maps, scratch
        # one call at a time: another thread replaying the same plan would patch the shared
        # parameter buffer between this one's patches and its launch (ctypes drops the GIL)
        self.lock = threading.Lock()

    @classmethod
    def make(cls, compiled, kernel, grid: tuple, fixed: tuple, subs: tuple, constexprs: dict, slots):
        """The launch of `compiled` a plan step makes (fixed: its arguments, None at the slots'
        places; subs: (position, slot or slots.Part, descriptor or None)), or None where
        Triton's path must take it. slots: this call's, to encode each descriptor's tensor map once."""
        lib = _lib()
        src, meta = getattr(compiled, "src", None), getattr(compiled, "metadata", None)
        if getattr(getattr(meta, "target", None), "backend", "cuda") != "cuda":
            return None                                # (a HIP kernel: hipModuleLaunchKernel's, not ours)
        if lib is None or make_tensordesc_arg is None or src is None or meta is None or not hooks_unset():
            return None
        if (getattr(meta, "num_ctas", 1) != 1 or getattr(meta, "launch_pdl", False)
                or getattr(meta, "launch_cooperative_grid", False) or getattr(meta, "profile_scratch_size", 0)):
            return None
        signature = list(src.signature.values())
        values = (*fixed, *(constexprs[name] for name in kernel.arg_names[len(fixed):]))
        if len(signature) != len(values):
            return None
        by_pos = {pos: (place, desc) for pos, place, desc in subs}
        descs = iter(getattr(meta, "tensordesc_meta", None) or ())
        keep, patches, maps = [], [], []
        for pos, (ty, value) in enumerate(zip(signature, values)):
            if not isinstance(ty, str):
                items = flat_scalars(ty, value)
                if items is None:
                    return None
                keep += items
                continue
            if ty == "constexpr":
                continue
            if ty.startswith("tensordesc"):
                desc_meta = next(descs, None)
                place, desc = by_pos.get(pos, (None, None))
                if desc_meta is None or desc is None:
                    return None                        # not a tensor map, or a descriptor of no slot
                base = tensor_at(slots, place)
                cu_map, *ints = make_tensordesc_arg(rebased(desc, base), desc_meta)
                copied = _copy_tensor_map(cu_map)
                if copied is None or len(ints) % 2:
                    return None
                buf, addr = copied
                before = ctypes.string_at(addr, _TENSOR_MAP_BYTES)
                if (lib.cuTensorMapReplaceAddress(addr, base.data_ptr()) != 0
                        or ctypes.string_at(addr, _TENSOR_MAP_BYTES) != before):
                    return None
                keep.append((buf, addr))
                maps.append((addr, *slot_offset(place)))
                n = len(ints) // 2
                keep += [ctypes.c_int32(x) for x in ints[:n]] + [ctypes.c_int64(x) for x in ints[n:]]
                continue
            c_type = _C.get("*" if ty.startswith("*") else ty)
            if c_type is None:
                return None                            # fp16 / bf16 scalars, or a type unknown here
            if ty.startswith("*"):
                place, desc = by_pos.get(pos, (None, None))
                if desc is not None:
                    return None
                if place is not None:
                    cell = c_type(0)
                    patches.append((cell, *slot_offset(place)))
                elif value is None or isinstance(value, int):
                    cell = c_type(value or 0)
                elif hasattr(value, "data_ptr"):
                    cell = c_type(value.data_ptr())    # a placeholder of the device, kept by the plan
                else:
                    return None
                keep.append(cell)
            else:
                keep.append(c_type(value))
        if next(descs, None) is not None:
            return None
        scratch_size = getattr(meta, "global_scratch_size", 0)
        scratch = None
        if scratch_size:
            scratch = (ctypes.c_uint64(0), scratch_size * math.prod(grid), getattr(meta, "global_scratch_align", 1))
        cells = [c[1] if isinstance(c, tuple) else ctypes.addressof(c) for c in keep]
        cells.append(ctypes.addressof(scratch[0]) if scratch else ctypes.addressof(_NULL))
        cells.append(ctypes.addressof(_NULL))          # profile scratch: none (checked above)
        params = (ctypes.c_void_p * len(cells))(*cells)
        num_warps, _, shared = compiled.packed_metadata
        grid3 = (*grid, 1, 1)[:3]
        return cls(lib, compiled.function, grid3, 32 * num_warps, shared, params, keep, patches, maps, scratch)

    def __call__(self, slots, stream: int) -> int:
        """Launch on `stream` with these slots -> the CUresult (0: launched)."""
        with self.lock:
            for cell, slot, offset in self.patches:
                cell.value = slots[slot].data_ptr() + offset
            replace = self.lib.cuTensorMapReplaceAddress
            for addr, slot, offset in self.maps:
                err = replace(addr, slots[slot].data_ptr() + offset)
                if err:
                    return err
            scratch = None                             # (held until the launch is queued, as Triton does)
            if self.scratch is not None:
                cell, size, align = self.scratch
                scratch = _allocation._allocator.get()(size, align, stream)
                cell.value = scratch.data_ptr()
            gx, gy, gz = self.grid
            if gx * gy * gz == 0:
                return 0
            err = self.lib.cuLaunchKernel(self.function, gx, gy, gz, self.block, 1, 1, self.shared, stream,
                                          self.params, None)
            del scratch
            return err


_NULL = ctypes.c_uint64(0)
