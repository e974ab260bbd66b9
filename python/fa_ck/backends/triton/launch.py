"""Kernel launches with less host time for repeated calls.

`kernel[grid](*args, **constexprs)` makes Triton bind every argument, specialise it, hash a
cache key and look the compiled kernel up on each launch: ~50 us of host time per launch on the
H200's host, ~110 us from autograd's backward thread (bench/results/h200-20261130-sixth, call
1), where an attention call has one to three launches and SDPA's whole fwd+bwd takes ~0.3 ms.
`launch` does that once per argument key and then hands the arguments straight to the compiled
kernel, the way Triton's own launch ends.

The key holds every argument by type and value except tensors, which enter as (dtype, device,
16-byte alignment): all that Triton specialises a pointer on. Ints, floats, bools, constexprs
and launch options enter by value, so any change to them takes Triton's path again (and Triton
compiles or reuses as it would). The interpreter always takes Triton's path.
"""
from __future__ import annotations

import torch
from triton import knobs
from triton.runtime import driver

from .configs import INTERPRET

_COMPILED: dict = {}
_MAX_ENTRIES = 4096           # a model has a few shapes; a sweep over many may refill it


def launch(kernel, grid: tuple, args: tuple, constexprs: dict) -> None:
    """kernel[grid](*args, **constexprs); `args` are the leading parameters, positionally,
    `constexprs` the rest by name (and launch options such as num_warps)."""
    if INTERPRET:
        kernel[grid](*args, **constexprs)
        return
    # (type and value, not value alone: 1, 1.0 and True hash alike, and Triton types them apart)
    key = (kernel, *[(a.dtype, a.get_device(), a.data_ptr() % 16 == 0) if isinstance(a, torch.Tensor)
                     else (type(a), a) for a in args], *constexprs.items())
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = kernel[grid](*args, **constexprs)
        if len(_COMPILED) >= _MAX_ENTRIES:
            _COMPILED.clear()
        _COMPILED[key] = compiled
        return
    # every parameter in signature order, as Triton passes its bound arguments
    values = (*args, *(constexprs[name] for name in kernel.arg_names[len(args):]))
    device = driver.active.get_current_device()
    stream = driver.active.get_current_stream(device)
    meta = compiled.launch_metadata(grid, stream, *values)
    compiled.run(grid[0], grid[1], grid[2], stream, compiled.function, compiled.packed_metadata, meta,
                 knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *values)
