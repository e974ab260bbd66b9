"""Kernel launches with less host time for repeated calls.

`kernel[grid](*args, **constexprs)` makes Triton bind every argument, specialise it, hash a
cache key and look the compiled kernel up on each launch: ~50 us of host time per launch on the
H200's host, ~110 us from autograd's backward thread (bench/results/h200-20261130-sixth, call
1), where an attention call has one to three launches and SDPA's whole fwd+bwd takes ~0.3 ms.
`launch` does that once per argument key and then hands the arguments straight to the compiled
kernel, the way Triton's own launch ends.

The key holds the current device and every argument by type and value except tensors, which
enter as what Triton specialises a pointer on: dtype, device, 16-byte alignment and, on ROCm,
whether the storage lies within 2 GiB (Triton's 32-bit buffer offsets). Ints, floats, bools,
constexprs and launch options enter by type and value, so any change to them takes Triton's
path again (and Triton compiles or reuses as it would). The interpreter always takes Triton's
path, as does a kernel launched without all its constexprs (their defaults are Triton's to fill).

Not seen on the direct path: Triton knobs changed after a key's first launch (TRITON_DEBUG,
instrumentation) and a kernel's pre-run hooks; our kernels have none, and a new process or a
new key picks the knobs up.
"""
from __future__ import annotations

import torch
from triton import knobs
from triton.runtime import driver

from .configs import INTERPRET

_COMPILED: dict = {}
_MAX_ENTRIES = 4096           # a model has a few shapes; a sweep over many may refill it
_HIP = torch.version.hip is not None
_MAX_INT32 = 2**31 - 1


def _tensor_key(t: torch.Tensor):
    if _HIP:                                  # Triton's "S" specialisation on AMD (buffer ops)
        return t.dtype, t.get_device(), t.data_ptr() % 16 == 0, t.untyped_storage().size() <= _MAX_INT32
    return t.dtype, t.get_device(), t.data_ptr() % 16 == 0


def launch(kernel, grid: tuple, args: tuple, constexprs: dict) -> None:
    """kernel[grid](*args, **constexprs); `args` are the leading parameters, positionally,
    `constexprs` the rest by name (and launch options such as num_warps)."""
    if INTERPRET:
        kernel[grid](*args, **constexprs)
        return
    device = driver.active.get_current_device()
    # (type and value, not value alone: 1, 1.0 and True hash alike, and Triton types them apart)
    if _HIP:
        tensors = [_tensor_key(a) if isinstance(a, torch.Tensor) else (type(a), a) for a in args]
    else:                                     # _tensor_key inline: a call per argument costs ~0.1 us
        tensors = [(a.dtype, a.get_device(), a.data_ptr() % 16 == 0) if isinstance(a, torch.Tensor)
                   else (type(a), a) for a in args]
    key = (kernel, device, *tensors, *[(name, type(value), value) for name, value in constexprs.items()])
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = kernel[grid](*args, **constexprs)
        if all(name in constexprs for name in kernel.arg_names[len(args):]):
            if len(_COMPILED) >= _MAX_ENTRIES:
                _COMPILED.clear()
            _COMPILED[key] = compiled
        return
    # every parameter in signature order, as Triton passes its bound arguments
    values = (*args, *(constexprs[name] for name in kernel.arg_names[len(args):]))
    stream = driver.active.get_current_stream(device)
    meta = compiled.launch_metadata(grid, stream, *values)
    compiled.run(grid[0], grid[1], grid[2], stream, compiled.function, compiled.packed_metadata, meta,
                 knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *values)
