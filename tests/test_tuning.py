"""The autotune switch and its on-disk cache (fa_ck/backends/triton/tuning.py), on the CPU.

No GPU and no Triton kernel: `bench` (and, for pick_config, Triton's do_bench) is a fake that
returns chosen times, so the tests check the decisions (search or not, which config, what is on
disk), not any speed.
"""
import dataclasses
import importlib
import importlib.util
import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

TUNING_PY = Path(__file__).resolve().parents[1] / "python" / "fa_ck" / "backends" / "triton" / "tuning.py"


def _load_tuning():
    # Loaded from its file, not through `import fa_ck...`: the module is pure Python and
    # these tests must not depend on the GPU package around it importing cleanly.
    spec = importlib.util.spec_from_file_location("fa_ck_tuning_under_test", TUNING_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CANDIDATES = [
    {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "num_stages": 2},
    {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 4},
]
DEFAULT = {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 1}


class FakeBench:
    """Returns times by BLOCK_N/BLOCK_M, records calls; configs in `fail` raise."""

    def __init__(self, times=None, fail=()):
        self.times = times or {(128, 64): 2.0, (128, 128): 1.0, (64, 64): 3.0}
        self.fail = set(fail)
        self.calls = []

    def __call__(self, cfg):
        self.calls.append(cfg)
        bm_bn = (cfg["BLOCK_M"], cfg["BLOCK_N"])
        if bm_bn in self.fail:
            raise RuntimeError("out of resources: shared memory")
        return self.times[bm_bn]


def _never_called(cfg):
    raise AssertionError("bench called although the config was cached")


@pytest.fixture
def tuning(tmp_path, monkeypatch):
    monkeypatch.setenv("FA_CK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FA_CK_AUTOTUNE", raising=False)
    mod = _load_tuning()
    monkeypatch.setattr(mod, "_versions", lambda: ("1.2.3", "3.7.1"))
    return mod


def _key(mod, **over):
    args = dict(arch="cuda:sm90", kernel="fwd", dtype="bfloat16", head_dim=128, causal=True,
                seqlen_q=4096, seqlen_k=4096)
    args.update(over)
    return mod.make_key(**args)


def _entries(mod):
    return json.loads(mod.cache_file().read_text())["entries"]


@pytest.mark.parametrize("value,expected", [("1", True), ("true", True), ("ON", True), ("0", False),
                                            ("off", False), ("", False)])
def test_switch_reads_env_at_call_time(tuning, monkeypatch, value, expected):
    monkeypatch.setenv("FA_CK_AUTOTUNE", value)
    assert tuning.autotune_enabled() is expected
    assert tuning.autotune_enabled(True) is True and tuning.autotune_enabled(False) is False


def test_default_off(tuning):
    assert tuning.autotune_enabled() is False


def test_cache_dir(tuning, monkeypatch, tmp_path):
    assert tuning.cache_dir() == tmp_path / "cache"
    monkeypatch.delenv("FA_CK_CACHE_DIR")
    assert tuning.cache_dir() == Path.home() / ".cache" / "fa_ck"


@pytest.mark.parametrize("sq,sk,bucket", [(1, 1, 128), (113, 7, 128), (129, 1, 256), (1024, 1024, 1024),
                                          (1025, 4096, 4096), (16385, 3, 32768), (10**6, 1, 65536)])
def test_seq_bucket(tuning, sq, sk, bucket):
    assert tuning.seq_bucket(sq, sk) == bucket


def test_off_returns_default_without_search_or_disk(tuning):
    bench = FakeBench()
    cfg = tuning.pick(_key(tuning), CANDIDATES, bench, DEFAULT)
    assert cfg == DEFAULT and bench.calls == []
    assert not tuning.cache_dir().exists()


def test_on_searches_once_picks_fastest_and_writes(tuning, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    bench = FakeBench()
    cfg = tuning.pick(_key(tuning), CANDIDATES, bench, DEFAULT)
    assert cfg == CANDIDATES[1]
    assert len(bench.calls) == 3
    entry = _entries(tuning)[_key(tuning).as_str()]
    assert entry["config"] == CANDIDATES[1] and entry["ms"] == 1.0
    assert "fa_ck1.2.3" in tuning.cache_file().name and "triton3.7.1" in tuning.cache_file().name
    # same process: memo answers, not the disk and not the bench
    tuning.cache_file().unlink()
    assert tuning.pick(_key(tuning), CANDIDATES, _never_called, DEFAULT) == CANDIDATES[1]
    assert not tuning.cache_file().exists()


def test_api_switch_overrides_env(tuning):
    bench = FakeBench()
    assert tuning.pick(_key(tuning), CANDIDATES, bench, DEFAULT, enabled=True) == CANDIDATES[1]
    assert len(bench.calls) == 3


def test_returned_config_is_a_copy(tuning, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    tuning.pick(_key(tuning), CANDIDATES, FakeBench(), DEFAULT)["BLOCK_M"] = 999
    assert tuning.pick(_key(tuning), CANDIDATES, _never_called, DEFAULT) == CANDIDATES[1]


def test_new_process_reuses_cache(tuning, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    tuning.pick(_key(tuning), CANDIDATES, FakeBench(), DEFAULT)
    tuning.clear_memo()
    assert tuning.pick(_key(tuning), CANDIDATES, _never_called, DEFAULT) == CANDIDATES[1]


def test_new_process_reuses_cache_subprocess(tuning, monkeypatch, tmp_path):
    """A real second interpreter, given only FA_CK_CACHE_DIR, finds the config on disk."""
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    tuning.pick(_key(tuning), CANDIDATES, FakeBench(), DEFAULT)
    script = textwrap.dedent(f"""
        import importlib.util, json
        spec = importlib.util.spec_from_file_location("t", {str(TUNING_PY)!r})
        t = importlib.util.module_from_spec(spec); spec.loader.exec_module(t)
        t._versions = lambda: ("1.2.3", "3.7.1")
        def bench(cfg):
            raise SystemExit("bench called in the second process")
        key = t.make_key("cuda:sm90", "fwd", "bfloat16", 128, True, 4096, 4096)
        print(json.dumps(t.pick(key, {CANDIDATES!r}, bench, {DEFAULT!r})))
    """)
    env = {"FA_CK_CACHE_DIR": str(tmp_path / "cache"), "FA_CK_AUTOTUNE": "1", "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == CANDIDATES[1]


@pytest.mark.parametrize("over", [dict(dtype="float16"), dict(head_dim=64), dict(causal=False),
                                  dict(seqlen_q=8192, seqlen_k=8192), dict(kernel="bwd_dq"),
                                  dict(arch="hip:gfx942"), dict(features="alibi")])
def test_keys_do_not_collide(tuning, monkeypatch, over):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    tuning.pick(_key(tuning), CANDIDATES, FakeBench(), DEFAULT)
    other = _key(tuning, **over)
    assert other != _key(tuning) and other.as_str() != _key(tuning).as_str()
    # a different optimum for the other key proves it was searched, not shared
    bench = FakeBench(times={(128, 64): 0.5, (128, 128): 1.0, (64, 64): 3.0})
    assert tuning.pick(other, CANDIDATES, bench, DEFAULT) == CANDIDATES[0]
    assert len(bench.calls) == 3
    tuning.clear_memo()  # both survive on disk
    assert tuning.pick(_key(tuning), CANDIDATES, _never_called, DEFAULT) == CANDIDATES[1]
    assert tuning.pick(other, CANDIDATES, _never_called, DEFAULT) == CANDIDATES[0]


def test_same_bucket_shares_entry(tuning, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    tuning.pick(_key(tuning, seqlen_q=3000, seqlen_k=3000), CANDIDATES, FakeBench(), DEFAULT)
    assert tuning.pick(_key(tuning, seqlen_q=4096, seqlen_k=2049), CANDIDATES, _never_called, DEFAULT) \
        == CANDIDATES[1]


@pytest.mark.parametrize("which", [0, 1])
def test_version_change_searches_again(tuning, monkeypatch, which):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    tuning.pick(_key(tuning), CANDIDATES, FakeBench(), DEFAULT)
    old_file = tuning.cache_file()
    versions = ["1.2.3", "3.7.1"]
    versions[which] = "9.9.9"
    monkeypatch.setattr(tuning, "_versions", lambda: tuple(versions))
    bench = FakeBench()
    assert tuning.pick(_key(tuning), CANDIDATES, bench, DEFAULT) == CANDIDATES[1]
    assert len(bench.calls) == 3
    assert tuning.cache_file() != old_file and tuning.cache_file().exists() and old_file.exists()


def test_real_versions_are_strings(tuning):
    mod = _load_tuning()  # unpatched
    fa_ck_version, triton_version = mod._versions()
    assert isinstance(fa_ck_version, str) and isinstance(triton_version, str)


@pytest.mark.parametrize("garbage", ["{not json", "[]", '{"format": 1, "entries": []}', '{"format": 99, "entries": {}}'])
def test_corrupt_file_is_ignored_and_rewritten(tuning, monkeypatch, garbage):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    tuning.cache_file().parent.mkdir(parents=True)
    tuning.cache_file().write_text(garbage)
    bench = FakeBench()
    with pytest.warns(RuntimeWarning, match="corrupt"):
        cfg = tuning.pick(_key(tuning), CANDIDATES, bench, DEFAULT)
    assert cfg == CANDIDATES[1] and len(bench.calls) == 3
    assert _entries(tuning)[_key(tuning).as_str()]["config"] == CANDIDATES[1]


def test_corrupt_entry_is_searched_again(tuning, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    tuning.cache_file().parent.mkdir(parents=True)
    tuning.cache_file().write_text(json.dumps({"format": 1, "entries": {_key(tuning).as_str(): "junk"}}))
    assert tuning.pick(_key(tuning), CANDIDATES, FakeBench(), DEFAULT) == CANDIDATES[1]


def test_failing_candidate_is_skipped(tuning, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    bench = FakeBench(fail={(128, 128)})   # the would-be fastest can't run
    assert tuning.pick(_key(tuning), CANDIDATES, bench, DEFAULT) == CANDIDATES[0]
    entry = _entries(tuning)[_key(tuning).as_str()]
    assert len(entry["failures"]) == 1 and "out of resources" in entry["failures"][0]


def test_non_finite_time_is_skipped(tuning, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    bench = FakeBench(times={(128, 64): float("nan"), (128, 128): float("inf"), (64, 64): 3.0})
    assert tuning.pick(_key(tuning), CANDIDATES, bench, DEFAULT) == CANDIDATES[2]


def test_all_candidates_failing_gives_default_with_warning(tuning, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    bench = FakeBench(fail={(128, 64), (128, 128), (64, 64)})
    with pytest.warns(RuntimeWarning, match="no candidate"):
        assert tuning.pick(_key(tuning), CANDIDATES, bench, DEFAULT) == DEFAULT
    assert not tuning.cache_file().exists()  # a failure is not cached on disk...
    assert tuning.pick(_key(tuning), CANDIDATES, _never_called, DEFAULT) == DEFAULT  # ...nor retried here


def test_concurrent_writers_merge(tuning, monkeypatch):
    """Another process wrote its key after we read the file: our write keeps it."""
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    other_key = _key(tuning, head_dim=64)
    real_search = tuning._search

    def search_while_another_process_writes(candidates, bench):
        tuning._write_entry(tuning.cache_file(), other_key.as_str(), {"config": CANDIDATES[2], "ms": 1.0})
        return real_search(candidates, bench)

    monkeypatch.setattr(tuning, "_search", search_while_another_process_writes)
    tuning.pick(_key(tuning), CANDIDATES, FakeBench(), DEFAULT)
    entries = _entries(tuning)
    assert entries[other_key.as_str()]["config"] == CANDIDATES[2]
    assert entries[_key(tuning).as_str()]["config"] == CANDIDATES[1]
    assert not list(tuning.cache_dir().glob("*.tmp"))


def test_unwritable_cache_dir_still_tunes(tuning, monkeypatch, tmp_path):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    monkeypatch.setenv("FA_CK_CACHE_DIR", str(blocker / "cache"))
    with pytest.warns(RuntimeWarning, match="cannot write"):
        assert tuning.pick(_key(tuning), CANDIDATES, FakeBench(), DEFAULT) == CANDIDATES[1]


def test_torch_dtype_key_name(tuning):
    torch = pytest.importorskip("torch")
    assert _key(tuning, dtype=torch.bfloat16) == _key(tuning, dtype="bfloat16")



# ------------------------------------------------------------------ issue 59: what the cache must survive

def _warnings_of(fn):
    """(fn(), the RuntimeWarnings it gave, as text)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_a_cache_file_that_is_not_utf8_is_ignored_and_searched_again(tuning, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    tuning.cache_file().parent.mkdir(parents=True)
    tuning.cache_file().write_bytes(b"\xff\xfe{\x80 not utf-8 \xc3")
    bench = FakeBench()
    cfg, warned = _warnings_of(lambda: tuning.pick(_key(tuning), CANDIDATES, bench, DEFAULT))
    assert cfg == CANDIDATES[1] and len(bench.calls) == 3 and warned
    assert _entries(tuning)[_key(tuning).as_str()]["config"] == CANDIDATES[1]


def test_a_cached_config_not_among_the_candidates_is_ignored_and_searched_again(tuning, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    tuning.cache_file().parent.mkdir(parents=True)
    entries = {_key(tuning).as_str(): {"config": {"BLOCK_M": "x"}, "ms": 1.0}}
    tuning.cache_file().write_text(json.dumps({"format": 1, "entries": entries}))
    bench = FakeBench()
    cfg, warned = _warnings_of(lambda: tuning.pick(_key(tuning), CANDIDATES, bench, DEFAULT))
    assert cfg == CANDIDATES[1] and len(bench.calls) == 3 and warned
    assert _entries(tuning)[_key(tuning).as_str()]["config"] == CANDIDATES[1]


# ------------------------------------------------------------------ pick_config: one kernel of a call

@pytest.fixture
def call():
    """A call's spec, its forward config (forward.py's: config.py decides it) and autotune's options
    for it (the candidate tiles as configs), the default's tiles first."""
    config = importlib.import_module("fa_ck.backends.triton.config")
    torch = pytest.importorskip("torch")
    spec = config.CallSpec(arch="cuda:sm90", dtype=torch.bfloat16, head_dim=128, batch=2, seqlen_q=4096,
                           seqlen_k=4096, heads_q=8, heads_kv=8, window_right=0)
    default = config.forward_config(spec)
    options = [config.forward_with_tiles(spec, t) for t in config.candidates("fwd", spec, default)]
    assert len(options) > 3 and options[0] == default
    return config, spec, default, options


class FakeTiming:
    """run(cfg) and Triton's do_bench(fn) as pick_config uses them: each timing runs fn once and
    takes ms[cfg] of the config it ran (1.0 + its place among the options but for `fastest`);
    `fail` raises in run. events: ("setup",) and ("run", cfg) in order."""

    def __init__(self, options, fastest, fail=()):
        self.ms = {id(c): 1.0 + i for i, c in enumerate(options)}
        self.ms[id(fastest)] = 0.5
        self.fail = {id(c) for c in fail}
        self.events, self.last = [], None

    def run(self, cfg):
        self.events.append(("run", cfg))
        if id(cfg) in self.fail:
            raise RuntimeError("out of resources: shared memory")
        self.last = cfg

    def setup(self):
        self.events.append(("setup",))

    def do_bench(self, fn, warmup=None, rep=None, return_mode=None):
        self.last = None
        fn()
        return self.ms[id(self.last)]

    @property
    def runs(self):
        return [e[1] for e in self.events if e[0] == "run"]


@pytest.fixture
def timing(monkeypatch, call):
    triton = pytest.importorskip("triton")
    importlib.import_module("triton.testing")
    _, _, _, options = call
    fake = FakeTiming(options, fastest=options[2])
    monkeypatch.setattr(triton.testing, "do_bench", fake.do_bench)
    return fake


def test_pick_config_off_returns_the_default_without_a_search(tuning, call, timing):
    _, spec, default, options = call
    assert tuning.pick_config("fwd", spec, default, options, timing.run, setup=timing.setup) == default
    assert timing.events == []
    assert not tuning.cache_dir().exists()


def test_pick_config_times_every_option_once_and_caches_the_fastest(tuning, call, timing, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    _, spec, default, options = call
    assert tuning.pick_config("fwd", spec, default, options, timing.run) is options[2]
    assert sorted(map(id, timing.runs)) == sorted(map(id, options))       # each option, once
    (key, entry), = _entries(tuning).items()
    assert entry["config"] == {name: getattr(options[2], name) for name in ("block_m", "block_n", "num_warps",
                                                                           "num_stages")}
    assert key.startswith("cuda:sm90|fwd|bfloat16|d128|causal|s4096|")
    # later calls, in this process or another, read it without timing
    timing.events.clear()
    again = [dataclasses.replace(c) for c in options]                      # (equal configs, made anew)
    assert tuning.pick_config("fwd", spec, default, again, timing.run) is again[2]
    tuning.clear_memo()
    assert tuning.pick_config("fwd", spec, default, again, timing.run, setup=timing.setup) is again[2]
    assert timing.events == []


def test_pick_config_caches_by_the_calls_key(tuning, call, timing, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    _, spec, default, options = call
    tuning.pick_config("fwd", spec, default, options, timing.run)
    timing.events.clear()
    for other in (dataclasses.replace(spec, head_dim=96), dataclasses.replace(spec, window_right=-1),
                  dataclasses.replace(spec, alibi=True), dataclasses.replace(spec, heads_kv=2)):
        tuning.pick_config("fwd", other, default, options, timing.run)      # searched again: another key
        assert len(timing.runs) == len(options)
        timing.events.clear()
    assert len(_entries(tuning)) == 5
    tuning.pick_config("bwd_dq", spec, default, options, timing.run)       # (another kernel: another key)
    assert len(timing.runs) == len(options)


def test_pick_config_sets_up_once_before_the_first_timing(tuning, call, timing, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    _, spec, default, options = call
    tuning.pick_config("fwd", spec, default, options, timing.run, setup=timing.setup)
    assert timing.events[0] == ("setup",) and timing.events.count(("setup",)) == 1
    assert len(timing.runs) == len(options)


def test_pick_config_skips_an_option_that_fails(tuning, call, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    triton = pytest.importorskip("triton")
    importlib.import_module("triton.testing")
    _, spec, default, options = call
    fake = FakeTiming(options, fastest=options[2], fail=[options[2]])      # the would-be fastest cannot run
    monkeypatch.setattr(triton.testing, "do_bench", fake.do_bench)
    assert tuning.pick_config("fwd", spec, default, options, fake.run) is options[0]
    (entry,) = _entries(tuning).values()
    assert len(entry["failures"]) == 1 and "out of resources" in entry["failures"][0]


def test_pick_config_gives_the_default_when_no_option_runs(tuning, call, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    triton = pytest.importorskip("triton")
    importlib.import_module("triton.testing")
    _, spec, default, options = call
    fake = FakeTiming(options, fastest=options[2], fail=options)
    monkeypatch.setattr(triton.testing, "do_bench", fake.do_bench)
    with pytest.warns(RuntimeWarning, match="no candidate"):
        assert tuning.pick_config("fwd", spec, default, options, fake.run) == default
    assert not tuning.cache_file().exists()
