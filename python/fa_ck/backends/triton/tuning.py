"""The autotune switch and its on-disk cache.

Off (the default): `pick` returns the caller's heuristic config at once, touching no file.
On (`FA_CK_AUTOTUNE=1`, or `autotune_enabled(True)` passed by the caller): the first call
for a key times every candidate, keeps the fastest and writes it to
`$FA_CK_CACHE_DIR` (default `~/.cache/fa_ck`); later calls, in this process or another,
read it back without searching.

The cache file's name carries the fa_ck and Triton versions, so a new version of either
starts from an empty file instead of reusing results measured for other code. Inside the
file, a key names the GPU architecture, kernel, dtype, head dim, causal and sequence-length
bucket (see `TuneKey`).

Pure Python: no torch or triton import at module level, so the cache logic is testable
anywhere and importing it costs nothing.
"""
from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Callable, NamedTuple, Optional

Config = dict  # e.g. {"block_m": 128, "block_n": 64, "num_warps": 4, "num_stages": 3}

_TRUE_WORDS = {"1", "true", "on", "yes"}
_FILE_FORMAT = 1
_MIN_BUCKET, _MAX_BUCKET = 128, 65536

# (cache file path, key string) -> config. Lets repeated calls in one process skip the disk.
_memo: dict[tuple[str, str], Config] = {}


def autotune_enabled(flag: Optional[bool] = None) -> bool:
    """`flag` when given, else env FA_CK_AUTOTUNE ("1"/"true"/"on"/"yes"), read at call time."""
    if flag is not None:
        return bool(flag)
    return os.environ.get("FA_CK_AUTOTUNE", "").strip().lower() in _TRUE_WORDS


def cache_dir() -> Path:
    """Env FA_CK_CACHE_DIR, else ~/.cache/fa_ck. Read at call time."""
    env = os.environ.get("FA_CK_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "fa_ck"


def seq_bucket(seqlen_q: int, seqlen_k: int) -> int:
    """Next power of two of max(seqlen_q, seqlen_k), clamped to [128, 65536]."""
    n = max(int(seqlen_q), int(seqlen_k), 1)
    return min(max(1 << (n - 1).bit_length(), _MIN_BUCKET), _MAX_BUCKET)


class TuneKey(NamedTuple):
    """What a tuned config depends on. Build it with `make_key` so the bucket is right."""
    arch: str          # "cuda:sm90", "hip:gfx942" (device.arch)
    kernel: str        # "fwd", "bwd_dkdv", "bwd_dq", ...
    dtype: str         # "bfloat16", "float16", "float8_e4m3fn", ...
    head_dim: int
    causal: bool
    seq_bucket: int
    features: str = ""  # anything else that changes the best config ("alibi,dropout", "varlen")

    def as_str(self) -> str:
        return "|".join([self.arch, self.kernel, self.dtype, f"d{self.head_dim}",
                         "causal" if self.causal else "full", f"s{self.seq_bucket}", self.features])


def make_key(arch: str, kernel: str, dtype, head_dim: int, causal: bool,
             seqlen_q: int, seqlen_k: int, features: str = "") -> TuneKey:
    """`dtype` may be a torch.dtype or its name; the key holds the bare name ("bfloat16")."""
    dtype_name = str(dtype).removeprefix("torch.")
    return TuneKey(arch, kernel, dtype_name, int(head_dim), bool(causal),
                   seq_bucket(seqlen_q, seqlen_k), features)


@functools.lru_cache(maxsize=None)
def _triton_version() -> str:
    try:
        import triton
        return str(triton.__version__)
    except Exception:
        return "none"


def _versions() -> tuple[str, str]:
    """(fa_ck version, triton version) that the cache file name carries."""
    try:
        import fa_ck
        fa_ck_version = str(getattr(fa_ck, "__version__", "0"))
    except Exception:  # a half-installed package must not break tuning
        fa_ck_version = "0"
    return fa_ck_version, _triton_version()


def cache_file() -> Path:
    fa_ck_version, triton_version = _versions()
    safe = lambda s: "".join(c if c.isalnum() or c in ".+-_" else "_" for c in s)  # noqa: E731
    return cache_dir() / f"tuning-fa_ck{safe(fa_ck_version)}-triton{safe(triton_version)}.json"


def clear_memo() -> None:
    """Forget what this process has looked up (the disk cache stays). Tests use it."""
    _memo.clear()


def pick(key: TuneKey, candidates: list[Config], bench: Callable[[Config], float],
         default: Config, enabled: Optional[bool] = None) -> Config:
    """The config to launch with for `key`.

    Autotune off: `default`, with no search and no disk I/O. On: the cached config for
    `key` if there is one; else `bench(cfg)` (milliseconds, lower is better) for each
    candidate, skipping any that raise (out of resources, compile errors) or return a
    non-finite time; the fastest is cached on disk and returned. If every candidate
    fails, `default` is returned with a warning and nothing is written to disk.
    `enabled` overrides FA_CK_AUTOTUNE (see autotune_enabled).
    """
    if not autotune_enabled(enabled):
        return default
    path = cache_file()
    key_str = key.as_str() if isinstance(key, TuneKey) else str(key)
    memo_key = (str(path), key_str)
    if memo_key in _memo:
        return dict(_memo[memo_key])

    cached = _read_entries(path).get(key_str)
    if isinstance(cached, dict) and isinstance(cached.get("config"), dict):
        if cached["config"] in candidates:
            _memo[memo_key] = cached["config"]
            return dict(cached["config"])
        warnings.warn(f"fa_ck autotune: ignoring the cached config {cached['config']} for {key_str}, which is not "
                      f"among this call's candidates; searching again", RuntimeWarning, stacklevel=2)

    best, timings, failures = _search(candidates, bench)
    if best is None:
        warnings.warn(f"fa_ck autotune: no candidate config ran for {key_str} "
                      f"({'; '.join(failures) or 'no candidates'}); using the default config",
                      RuntimeWarning, stacklevel=2)
        _memo[memo_key] = dict(default)   # don't retry every call; a new process will retry
        return dict(default)
    entry = {"config": best, "ms": min(t for _, t in timings), "timings": timings, "failures": failures}
    _write_entry(path, key_str, entry)
    _memo[memo_key] = best
    return dict(best)


def _search(candidates: list[Config], bench: Callable[[Config], float]):
    """(fastest config or None, [(config, ms)] that ran, ["config: error"] that did not)."""
    timings, failures = [], []
    for cfg in candidates:
        try:
            ms = float(bench(dict(cfg)))
        except Exception as e:  # e.g. triton OutOfResources: this config can't run here
            failures.append(f"{cfg}: {type(e).__name__}: {e}"[:300])
            continue
        if math.isfinite(ms) and ms > 0:
            timings.append((dict(cfg), ms))
        else:
            failures.append(f"{cfg}: bad time {ms}")
    if not timings:
        return None, timings, failures
    return min(timings, key=lambda ct: ct[1])[0], timings, failures


def _read_entries(path: Path) -> dict:
    """The file's entries; {} when missing, and {} with a warning when unreadable or corrupt
    (the next write replaces it)."""
    try:
        text = path.read_text()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except (OSError, UnicodeDecodeError) as e:
        warnings.warn(f"fa_ck autotune: cannot read {path} ({e}); searching again", RuntimeWarning)
        return {}
    try:
        data = json.loads(text)
        entries = data["entries"]
        if data.get("format") != _FILE_FORMAT or not isinstance(entries, dict):
            raise ValueError(f"unexpected format {data.get('format')!r}")
        return entries
    except Exception as e:
        warnings.warn(f"fa_ck autotune: ignoring corrupt cache file {path} ({type(e).__name__}: {e}); "
                      "it will be rewritten", RuntimeWarning)
        return {}


def _write_entry(path: Path, key_str: str, entry: dict) -> None:
    """Add one entry. Other processes may write the same file: we hold a lock while we
    re-read, merge and replace it, and the replace is atomic (temp file + os.replace), so
    a reader never sees half a file and no writer's entries are lost."""
    fa_ck_version, triton_version = _versions()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _file_lock(path.with_name(path.name + ".lock")):
            with warnings.catch_warnings():  # a corrupt file was already reported on read
                warnings.simplefilter("ignore")
                entries = _read_entries(path)
            entries[key_str] = entry
            data = {"format": _FILE_FORMAT, "fa_ck": fa_ck_version, "triton": triton_version,
                    "entries": entries}
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump(data, f, indent=1, sort_keys=True)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
    except OSError as e:  # read-only home, full disk: tuning still works, just isn't kept
        warnings.warn(f"fa_ck autotune: cannot write {path} ({e}); result kept for this process only",
                      RuntimeWarning)


@contextlib.contextmanager
def _file_lock(lock_path: Path):
    """An exclusive advisory lock where the OS has one (POSIX); elsewhere none, and the
    atomic replace alone keeps the file whole."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lock_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def pick_config(kernel: str, spec, default, options: list, run: Callable, setup: Callable | None = None):
    """Autotune one kernel of a call: the fastest of `options` (its configs for this call, which
    config.py derived from autotune's candidate tiles) by timing run(cfg), cached on disk under the
    call's key; `default` when autotune is off or none ran. setup: called once before the first
    timing (what the kernel reads from an earlier launch)."""
    from fa_ck.backends.triton.config import TILES as tiles, knobs   # (here: this module imports no torch)

    own = {name: getattr(default, name) for name in tiles}
    switches = {name: getattr(default, name) for name in knobs(type(default)) if name not in tiles}
    features = [name for name, on in (("alibi", spec.alibi), ("softcap", spec.softcap), ("dropout", spec.dropout),
                                      ("varlen", spec.varlen), ("window", spec.window_left >= 0),
                                      ("deterministic", spec.deterministic), ("fp8", spec.fp8),
                                      ("fp8_inputs", spec.fp8_inputs)) if on]
    features += [f"{name}={int(value)}" for name, value in switches.items()]
    features += ["own=" + "x".join(str(own[name]) for name in tiles), f"group={spec.group}"]
    key = make_key(spec.arch, kernel, spec.dtype, spec.head_dim, spec.window_right == 0, spec.seqlen_q,
                   spec.seqlen_k, "-".join(features))
    by_tiles = {json.dumps({name: getattr(c, name) for name in tiles}, sort_keys=True): c for c in options}
    pending = [setup]

    def bench(t: Config) -> float:
        import triton
        if pending[0] is not None:
            pending.pop()()
            pending.append(None)
        cfg = by_tiles[json.dumps(t, sort_keys=True)]
        # (warm and time long: short windows pick configs slower than the defaults)
        return triton.testing.do_bench(lambda: run(cfg), warmup=25, rep=60, return_mode="median")
    chosen = pick(key, [json.loads(t) for t in by_tiles], bench, own)
    return by_tiles.get(json.dumps({name: chosen.get(name) for name in tiles}, sort_keys=True), default)
