"""Which backend serves a call, and why. explain() prints exactly what choose() decides, explain_kvcache()
what choose_kvcache() decides."""
from __future__ import annotations

import importlib
import os

from .params import AttnParams, KVCacheParams

NAMES = ("ck", "triton", "sdpa", "reference")
AUTO_ORDER = ("ck", "triton", "reference")   # sdpa serves only when asked for by name
_modules: dict = {}


class _Broken:
    """Stands in for a backend module whose import failed, so one broken backend
    never takes the others down; it reports the import error as its reason."""

    def __init__(self, name, err):
        self.NAME, self.reason = name, f"import of fa_ck.backends.{name} failed ({type(err).__name__}: {err})"

    def available(self):
        return False, self.reason

    def unsupported(self, q, k, v, p):
        return self.reason


def module(name: str):
    if name not in NAMES:
        raise ValueError(f"backend must be one of {('auto',) + NAMES}, got {name!r}")
    if name not in _modules:
        try:
            _modules[name] = importlib.import_module(f".backends.{name}", __package__)
        except Exception as e:  # noqa: BLE001 - any failure stays inside that one backend
            _modules[name] = _Broken(name, e)
    return _modules[name]


def backends() -> dict[str, tuple[bool, str]]:
    """name -> (available here, why not / note)."""
    return {name: module(name).available() for name in NAMES}


def requested(backend: str | None) -> str:
    """The backend argument, or FA_CK_BACKEND when the argument is 'auto'."""
    name = backend or "auto"
    if name == "auto":
        name = os.environ.get("FA_CK_BACKEND", "auto") or "auto"
        if name != "auto" and name not in NAMES:     # the caller passed no backend: blame the variable
            raise ValueError(f"FA_CK_BACKEND must be one of {('auto',) + NAMES} or unset, got {name!r} "
                             f"(the backend argument was {backend!r})")
    if name != "auto" and name not in NAMES:
        raise ValueError(f"backend must be one of {('auto',) + NAMES}, got {name!r}")
    return name


def choose(q, k, v, p: AttnParams, backend: str | None = "auto") -> tuple[str, list[str]]:
    """(backend name, one line per backend considered). A forced backend that cannot serve
    the call raises NotImplementedError naming what it lacks; it never falls back."""
    return _choose(backend, lambda name: module(name).unsupported(q, k, v, p),
                   ", ".join(p.features()) or "no optional features", "call", "explain")


def _choose(backend, why_not, features: str, call: str, explainer: str) -> tuple[str, list[str]]:
    """choose()'s rule for any kind of call: why_not(name) says why a backend cannot serve it, or None."""
    name = requested(backend)
    if name != "auto":
        why = why_not(name)
        if why is not None:
            raise NotImplementedError(f"backend {name!r} cannot serve this {call}: {why} "
                                      f"(call uses: {features}; see fa_ck.{explainer}())")
        return name, [f"{name}: forced (backend={backend!r}"
                      + (", FA_CK_BACKEND" if backend in (None, "auto") else "") + ")"]
    lines = []
    for cand in AUTO_ORDER:
        why = why_not(cand)
        if why is None:
            lines.append(f"{cand}: chosen")
            return cand, lines
        lines.append(f"{cand}: skipped, {why}")
    raise NotImplementedError(f"no backend can serve this {call}:\n  " + "\n  ".join(lines))


def explanation(head: str, choose_call) -> str:
    """explain()'s text: the call's head line, one line per backend considered, then the choice."""
    try:
        name, lines = choose_call()
    except NotImplementedError as e:
        return f"{head}\n-> no backend: {e}"
    return head + "\n" + "\n".join("  " + line for line in lines) + f"\n-> {name}"


def kvcache_unsupported(name: str, q, k_cache, v_cache, p: KVCacheParams) -> str | None:
    """Why backend `name` cannot serve this KV-cache call, or None; a backend without the KV-cache
    functions (backends/__init__.py) cannot serve any."""
    mod = module(name)
    if isinstance(mod, _Broken):
        return mod.reason
    if not (hasattr(mod, "kvcache_unsupported") and hasattr(mod, "kvcache_forward")):
        return "no KV-cache path"
    return mod.kvcache_unsupported(q, k_cache, v_cache, p)


def choose_kvcache(q, k_cache, v_cache, p: KVCacheParams, backend: str | None = "auto") -> tuple[str, list[str]]:
    """choose() for flash_attn_with_kvcache: (backend name, one line per backend considered)."""
    return _choose(backend, lambda name: kvcache_unsupported(name, q, k_cache, v_cache, p), ", ".join(p.features()),
                   "KV-cache call", "explain_kvcache")


# Every backend is imported with the package: torch.compile cannot import one inside a traced call.
for _name in NAMES:
    module(_name)
