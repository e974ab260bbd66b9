"""Kernel launches with less host time for repeated calls.

`kernel[grid](*args, **constexprs)` makes Triton bind every argument, specialise it, hash a
cache key and look the compiled kernel up on each launch: ~50 us of host time per launch on the
H200's host, ~110 us from autograd's backward thread (bench/results/h200-20261130-sixth, call
1), where an attention call has one to three launches and SDPA's whole fwd+bwd takes ~0.3 ms.
`launch` does that once per argument key and then hands the arguments straight to the compiled
kernel, the way Triton's own launch ends.

The key is what Triton's own cache key is made of: each argument's specialisation by Triton's
own function (`native_specialize_impl`, with the device's backend and each parameter's flags:
dtype and 16-byte alignment of a pointer, on ROCm whether its storage lies within 2 GiB; an
int's width, == 1 and multiple of 16 unless `do_not_specialize`; a float's type), the current
device, and the constexprs and launch options by type and value. Calls that differ only in what
Triton does not specialise on (a sequence length that stays a multiple of 16, the softmax scale)
share the compiled kernel, as under Triton's path, and pass their own values.

Triton's path is taken for the first launch of a key, always in the interpreter, for a kernel
launched without all its constexprs (their defaults are Triton's to fill) or with annotated or
constexpr leading parameters, and where this Triton lacks `native_specialize_impl`. Not seen on
the direct path: Triton knobs changed after a key's first launch (TRITON_DEBUG,
instrumentation) and pre-run hooks; our kernels have none.
"""
from __future__ import annotations

from triton import knobs
from triton.runtime import driver

from .configs import INTERPRET

try:      # Triton's argument specialisation (C++), the one its launch path keys kernels by
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import native_specialize_impl
except ImportError:                           # another Triton: every launch takes Triton's path
    native_specialize_impl = None

_COMPILED: dict = {}
_MAX_ENTRIES = 4096           # a model has a few shapes; a sweep over many may refill it
_FLAGS: dict = {}
_BACKENDS: dict = {}


def _param_flags(kernel, n: int):
    """(is_const, specialize, align) of the first n parameters, as Triton's binder passes them
    to native_specialize_impl; None when one is a constexpr or annotated (Triton's path then).
    Kernels are keyed by id (a JITFunction hashes its source on every hash) and kept alive by
    the entry, so an id cannot come back for another kernel."""
    entry = _FLAGS.get((id(kernel), n))
    if entry is None:
        params = kernel.params[:n]
        plain = len(params) == n and not any(p.is_constexpr or p.annotation_type for p in params)
        flags = tuple((p.is_const, not p.do_not_specialize, not p.do_not_specialize_on_alignment)
                      for p in params) if plain else None
        entry = _FLAGS[(id(kernel), n)] = (kernel, flags)
    return entry[1]


def _backend(device):
    if device not in _BACKENDS:
        _BACKENDS[device] = make_backend(driver.active.get_current_target())
    return _BACKENDS[device]


def launch(kernel, grid: tuple, args: tuple, constexprs: dict):
    """kernel[grid](*args, **constexprs); `args` are the leading parameters, positionally,
    `constexprs` the rest by name (and launch options such as num_warps). -> the compiled kernel
    where a later launch of the very same specialisation may go to it with run_compiled (None
    where Triton's path must be taken every time)."""
    flags = None if INTERPRET or native_specialize_impl is None else _param_flags(kernel, len(args))
    if flags is None:
        kernel[grid](*args, **constexprs)
        return None
    device = driver.active.get_current_device()
    backend = _backend(device)
    # constexprs by type and value: 1, 1.0 and True hash alike, and Triton types them apart
    key = (id(kernel), device, *[native_specialize_impl(backend, a, c, s, al) for a, (c, s, al) in zip(args, flags)],
           *[(name, type(value), value) for name, value in constexprs.items()])
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = kernel[grid](*args, **constexprs)
        if not all(name in constexprs for name in kernel.arg_names[len(args):]):
            return None
        if len(_COMPILED) >= _MAX_ENTRIES:
            _COMPILED.clear()
        _COMPILED[key] = compiled
        return compiled
    run_compiled(compiled, kernel, grid, args, constexprs, device)
    return compiled


def run_compiled(compiled, kernel, grid: tuple, args: tuple, constexprs: dict, device=None) -> None:
    """Launch `compiled` (what launch returned for these arguments' specialisation) without
    working the specialisation out again: for callers that know nothing it is keyed on has
    changed (the triton backend's replayed plans: ~25 us of host time per launch on the H200's
    host went into native_specialize_impl alone, h200-20261130-ninth call 7)."""
    if device is None:
        device = driver.active.get_current_device()
    # every parameter in signature order, as Triton passes its bound arguments
    values = (*args, *(constexprs[name] for name in kernel.arg_names[len(args):]))
    stream = driver.active.get_current_stream(device)
    grid = (*grid, 1, 1)[:3]                 # a 1- or 2-D grid as Triton pads it
    meta = compiled.launch_metadata(grid, stream, *values)
    compiled.run(grid[0], grid[1], grid[2], stream, compiled.function, compiled.packed_metadata, meta,
                 knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *values)
