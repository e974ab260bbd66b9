"""Launches keyed by Triton's own specialisation of their arguments.

`kernel[grid](*args, **constexprs)` binds every argument, specialises it, hashes a cache key and
looks the compiled kernel up on each launch. `launch` does that once per key and then hands the
arguments straight to the compiled kernel, the way Triton's own launch ends (docs/performance.md,
"Host time per call").

The key is what Triton's own cache key is made of: each argument's specialisation by Triton's own
function (`native_specialize_impl`: a pointer's dtype and 16-byte alignment, an int's width, == 1
and multiple of 16 unless `do_not_specialize`, a float's type), the current device, and the
constexprs and launch options by type and value. Triton's path is taken for the first launch of a
key, for a kernel launched without all its constexprs, with annotated or constexpr leading
parameters, and everywhere once this Triton turns out to lack what the key needs.
"""
from __future__ import annotations

import warnings

from .. import device

try:
    from triton import knobs
    from triton.compiler.compiler import make_backend
    from triton.runtime import driver
    from triton.runtime.jit import native_specialize_impl
    _MISSING = ""
except ImportError as e:          # another Triton: every launch takes Triton's path
    _MISSING = f"{type(e).__name__}: {e}"

_COMPILED: dict = {}
_MAX_ENTRIES = 4096               # a model has a few shapes; a sweep over many may refill it
_FLAGS: dict = {}
_BACKENDS: dict = {}
_STATE = {"problem": _MISSING, "warned": False}


def _problem() -> str:
    """'' while keyed launches work with this Triton, else why not (warned about once)."""
    if _MISSING and not _STATE["warned"]:
        _disable(_MISSING)
    return _STATE["problem"]


def _disable(why: str) -> None:
    _STATE["problem"] = why
    if not _STATE["warned"]:
        _STATE["warned"] = True
        warnings.warn(f"fa_ck: this Triton lacks what fa_ck's keyed launches rely on ({why}); every launch "
                      "takes Triton's own launcher", RuntimeWarning, stacklevel=4)


def _param_flags(kernel, n: int):
    """(is_const, specialize, align) of the first n parameters, as Triton's binder passes them to
    native_specialize_impl; None when one is a constexpr or annotated. Kernels are keyed by id (a
    JITFunction hashes its source on every hash) and kept alive by the entry."""
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


def launch(kernel, grid: tuple, args: tuple, constexprs: dict, compiled=None):
    """kernel[grid](*args, **constexprs), `args` the leading parameters and `constexprs` the rest by
    name; `compiled`: what an earlier launch of the same specialisation returned. -> the compiled
    kernel for later launches (None where Triton's path must be taken every time). Falls back to
    Triton's path, with one warning, where this Triton lacks what the key relies on."""
    if device.INTERPRET or _problem():
        kernel[grid](*args, **constexprs)
        return None
    if compiled is None:
        key = _key(kernel, args, constexprs)
        compiled = _COMPILED.get(key) if key is not None else None
        if compiled is None:
            compiled = kernel[grid](*args, **constexprs)
            if key is None or not all(name in constexprs for name in kernel.arg_names[len(args):]):
                return None
            if len(_COMPILED) >= _MAX_ENTRIES:
                _COMPILED.clear()
            _COMPILED[key] = compiled
            return compiled
    try:
        run_compiled(compiled, kernel, grid, args, constexprs)
    except (TypeError, AttributeError) as e:       # (a Triton whose launcher changed: raised before launching)
        _disable(f"{type(e).__name__}: {e}")
        kernel[grid](*args, **constexprs)
        return None
    return compiled


def _key(kernel, args: tuple, constexprs: dict):
    """Triton's specialisation of the arguments, the device and the constexprs; None for kernels
    whose leading parameters are annotated or constexpr."""
    flags = _param_flags(kernel, len(args))
    if flags is None:
        return None
    try:
        device = driver.active.get_current_device()
        backend = _backend(device)
        # constexprs by type and value: 1, 1.0 and True hash alike, and Triton types them apart
        return (id(kernel), device, *[native_specialize_impl(backend, a, c, s, al) for a, (c, s, al) in zip(args, flags)],
                *[(name, type(value), value) for name, value in constexprs.items()])
    except Exception as e:                         # (a Triton whose specialisation changed)
        _disable(f"{type(e).__name__}: {e}")
        return None


def run_compiled(compiled, kernel, grid: tuple, args: tuple, constexprs: dict, device=None) -> None:
    """Launch `compiled` (what launch returned for these arguments' specialisation) without working
    the specialisation out again: for callers that know nothing it is keyed on has changed."""
    if device is None:
        device = driver.active.get_current_device()
    values = (*args, *(constexprs[name] for name in kernel.arg_names[len(args):]))   # signature order
    stream = driver.active.get_current_stream(device)
    grid = (*grid, 1, 1)[:3]                 # a 1- or 2-D grid as Triton pads it
    meta = compiled.launch_metadata(grid, stream, *values)
    compiled.run(grid[0], grid[1], grid[2], stream, compiled.function, compiled.packed_metadata, meta,
                 knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *values)
