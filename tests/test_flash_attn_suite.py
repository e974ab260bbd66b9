"""tools/flash_attn_suite.sh's own parts, without the network: the selection and skips of its conftest
(tools/flash_attn_shim/conftest.py) on stand-in test items, and the flash_attn shim's names."""
import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

import fa_ck

ROOT = Path(__file__).resolve().parents[1]
SHIM = ROOT / "tools" / "flash_attn_shim"


def _load_conftest():
    spec = importlib.util.spec_from_file_location("fa_suite_conftest", SHIM / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


suite = _load_conftest()


def _item(fn, **params):
    ids = "-".join(str(v) for v in params.values())
    return types.SimpleNamespace(name=f"{fn}[{ids}]" if params else fn, callspec=types.SimpleNamespace(params=params))


def _grid(fn, **axes):
    return [_item(fn, **dict(zip(axes, vals))) for vals in itertools.product(*axes.values())]


def _names(items):
    return {it.name for it in items}


def test_gpu_selection_keeps_listed_tests_at_the_issue_head_dims():
    causal = _grid("test_flash_attn_causal", seqlen_q=[1, 113], seqlen_k=[239], d=[32, 59, 128, 256],
                   dtype=[torch.float16, torch.bfloat16], local=[False, True])
    overflow = _grid("test_flash_attn_bwd_overflow", seqlen=[1, 17], d=[16, 32, 64], causal=[False, True])
    other = _grid("test_flash_attn_bwd_transpose_other", d=[128]) + [_item("test_something_else")]
    sel, desel = suite.select(causal + overflow + other)
    assert len(sel) + len(desel) == len(causal + overflow + other)
    assert {it.callspec.params["d"] for it in sel if "causal[" in it.name} == {59, 128, 256}
    assert sum("causal[" in it.name for it in sel) == 2 * 3 * 2 * 2
    assert _names(overflow) <= _names(sel)            # none of its head dims is wanted: it keeps its own
    assert not _names(other) & _names(sel)


def test_gpu_selection_thins_the_product_tests_stably():
    items = _grid("test_flash_attn_output", seqlen_q=[113, 128, 256], seqlen_k=[203, 512], d=[59, 128, 256],
                  causal=[False, True], local=[False, True], alibi=[False, True], dropout_p=[0.0, 0.17],
                  dtype=[torch.float16, torch.bfloat16], kvpacked=[False, True])
    sel, _ = suite.select(items)
    n = len(items) / suite.KEEP_ONE_IN["test_flash_attn_output"]
    assert 0.7 * n < len(sel) < 1.3 * n
    assert _names(sel) == _names(suite.select(list(reversed(items)))[0])
    for key in ("d", "causal", "local", "alibi", "dropout_p", "dtype"):
        assert {it.callspec.params[key] for it in sel} == {it.callspec.params[key] for it in items}


def test_cpu_selection_is_each_feature_alone_at_the_smallest_size():
    items = _grid("test_flash_attn_output", seqlen_q=[113, 1024], seqlen_k=[203, 1024], d=[59, 128],
                  causal=[False, True], alibi=[False, True], softcap=[0.0, 50.0], mha_type=["mha", "gqa"],
                  dtype=[torch.float16, torch.bfloat16])
    race = _grid("test_flash_attn_race_condition", seqlen_q=[1], seqlen_k=[339], d=[59], causal=[False, True]) + \
        _grid("test_flash_attn_deterministic", seqlen_q=[113], seqlen_k=[203], d=[59])
    sel, _ = suite.select(items + race, cpu=True)
    assert all(it.callspec.params["d"] == 59 and it.callspec.params["dtype"] == torch.float16 for it in sel)
    assert {(it.callspec.params["seqlen_q"], it.callspec.params["seqlen_k"]) for it in sel} == {(113, 203)}
    on = sorted(tuple(k for k in ("causal", "alibi", "softcap", "mha_type")
                      if it.callspec.params[k] not in suite.PLAIN) for it in sel)
    assert on == [(), ("alibi",), ("causal",), ("mha_type",), ("softcap",)]
    assert not _names(race) & _names(sel)


def test_skip_reasons():
    paged = {"paged_kv_block_size": 256}
    assert suite.skip_reason("test_flash_attn_kvcache[x]", {}, False) is None
    assert suite.skip_reason("test_flash_attn_kvcache[x]", paged, False) is None     # flash_attn_with_kvcache pages
    assert "block_table" in suite.skip_reason("test_flash_attn_varlen_causal[x]", paged, False)
    assert suite.skip_reason("test_flash_attn_varlen_causal[x]", paged, True) is None
    assert suite.skip_reason("test_flash_attn_varlen_causal[x]", {"paged_kv_block_size": None}, False) is None


def _kvcache_grid():
    return _grid("test_flash_attn_kvcache", seqlen_q=[1, 64], seqlen_k=[128, 256], d=[59, 128], has_batch_idx=[False],
                 has_leftpad=[False, True], paged_kv_block_size=[None, 256], rotary_fraction=[0.0, 0.5, 1.0],
                 rotary_interleaved=[False, True], seqlen_new_eq_seqlen_q=[True, False], causal=[False, True],
                 local=[False, True], alibi=[False, True], new_kv=[False, True], mha_type=["mha", "gqa"],
                 num_splits=[1, 0], dtype=[torch.float16])


def test_cpu_selection_of_kvcache_appends_and_rotates():
    """Each feature alone at the smallest size with new keys appended, and each feature beside rotary
    (rotary_dim < head_dim) with 64 queries, where the causal rule for q's positions shows."""
    sel, _ = suite.select(_kvcache_grid(), cpu=True)
    params = [it.callspec.params for it in sel]
    assert all(p["d"] == 59 and p["has_batch_idx"] is False for p in params)
    small = [p for p in params if (p["seqlen_q"], p["seqlen_k"]) == (1, 128)]
    rotary = [p for p in params if (p["seqlen_q"], p["seqlen_k"]) == (64, 256)]
    assert len(small) + len(rotary) == len(params)
    assert sum(p["new_kv"] for p in small) == len(small) - 1          # the plain case appends; one case does not
    assert all(p["rotary_fraction"] == 0.5 and p["new_kv"] for p in rotary)
    assert any(p["causal"] for p in rotary) and any(p["paged_kv_block_size"] == 256 for p in rotary)
    assert 10 <= len(small) <= 16 and 8 <= len(rotary) <= 14


def test_gpu_selection_of_kvcache_keeps_paged_and_rotary_cases():
    items = _kvcache_grid()
    sel, _ = suite.select(items)
    n = len([it for it in items if it.callspec.params["d"] in suite.HEAD_DIMS]) / suite.KEEP_ONE_IN[
        "test_flash_attn_kvcache"]
    assert 0.5 * n < len(sel) < 1.5 * n
    assert {it.callspec.params["paged_kv_block_size"] for it in sel} == {None, 256}


@pytest.fixture
def shim(tmp_path, monkeypatch):
    """The shim package as fetch lays it out, less flash-attn's own files (not needed to import it)."""
    shutil.copytree(SHIM / "flash_attn", tmp_path / "flash_attn")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "flash_attn" or m.startswith("flash_attn.")]:
        monkeypatch.delitem(sys.modules, name)
    import flash_attn
    yield flash_attn
    for name in [m for m in sys.modules if m == "flash_attn" or m.startswith("flash_attn.")]:
        del sys.modules[name]


def test_shim_reexports_fa_ck(shim):
    from flash_attn.flash_attn_interface import _get_block_size_n, flash_attn_with_kvcache
    for name in ("flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func", "flash_attn_varlen_func",
                 "flash_attn_varlen_kvpacked_func", "flash_attn_varlen_qkvpacked_func", "flash_attn_with_kvcache"):
        assert getattr(shim, name) is getattr(fa_ck, name)
    assert flash_attn_with_kvcache is fa_ck.flash_attn_with_kvcache
    assert _get_block_size_n is fa_ck.interface.s_dmask_block_n
    assert suite._paged_kv_supported() is False       # varlen refuses a block_table today; update with the feature


def test_gpu_query_stand_ins_answer_only_for_a_missing_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", torch.cuda.get_device_capability)
    monkeypatch.setattr(torch.cuda, "get_device_properties", torch.cuda.get_device_properties)
    monkeypatch.setattr(torch.cuda, "device", torch.cuda.device)
    suite.stand_in_for_gpu_queries()
    assert torch.cuda.get_device_capability("cuda") == (9, 0)
    assert torch.cuda.get_device_properties("cuda").total_memory >= 16 * 2**30
    with torch.cuda.device(torch.zeros(1).device.index):          # a CPU tensor's index: None
        pass


def test_script_parses_and_pins_the_shim_version():
    assert subprocess.run(["bash", "-n", str(ROOT / "tools" / "flash_attn_suite.sh")]).returncode == 0
    usage = subprocess.run(["bash", str(ROOT / "tools" / "flash_attn_suite.sh")], capture_output=True, text=True)
    assert usage.returncode == 2 and "fetch DIR" in usage.stderr
    script = (ROOT / "tools" / "flash_attn_suite.sh").read_text()
    version = next(line.split('"')[1] for line in (SHIM / "flash_attn" / "__init__.py").read_text().splitlines()
                   if line.startswith("__version__"))
    assert f"VERSION={version}\n" in script


def test_selection_runs_in_turns_of_one_test_per_function():
    items = _grid("test_flash_attn_causal", d=[59, 128]) + _grid("test_flash_attn_splitkv", d=[59, 128, 256]) + \
        [_item("test_flash_attn_bwd_transpose")]
    order = [it.name.split("[")[0] for it in suite.interleaved(items)]
    assert order == ["test_flash_attn_causal", "test_flash_attn_splitkv", "test_flash_attn_bwd_transpose",
                     "test_flash_attn_causal", "test_flash_attn_splitkv", "test_flash_attn_splitkv"]
    assert sorted(it.name for it in suite.interleaved(items)) == sorted(it.name for it in items)


def test_out_of_memory_is_recognised_in_each_form_the_gpu_run_raised():
    assert suite.is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB"))
    assert suite.is_out_of_memory(RuntimeError("CUDA error: out of memory"))       # torch.AcceleratorError's text
    assert suite.is_out_of_memory(RuntimeError("Triton Error [CUDA]: out of memory"))
    assert not suite.is_out_of_memory(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert not suite.is_out_of_memory(AssertionError("out of memory"))


def _flaky(fails, error):
    calls = []

    def run():
        calls.append(1)
        if len(calls) <= fails:
            raise error
    return run, calls


def test_rerun_after_oom_waits_and_releases_before_each_try():
    run, calls = _flaky(2, torch.OutOfMemoryError("out of memory"))
    events = []
    n = suite.rerun_after_oom(run, (1.0, 2.0, 3.0), release=lambda: events.append("release"), sleep=events.append)
    assert n == 3 and len(calls) == 3
    assert events == ["release", 1.0, "release", 2.0, "release", 3.0]


def test_rerun_after_oom_gives_up_with_the_last_error_and_stops_on_any_other():
    run, calls = _flaky(9, torch.OutOfMemoryError("still out of memory"))
    with pytest.raises(torch.OutOfMemoryError, match="still"):
        suite.rerun_after_oom(run, (0, 0), release=lambda: None, sleep=lambda s: None)
    assert len(calls) == 2
    state = []

    def run_then_assert():
        state.append(1)
        raise AssertionError("wrong output")
    with pytest.raises(AssertionError, match="wrong output"):
        suite.rerun_after_oom(run_then_assert, (0, 0, 0), release=lambda: None, sleep=lambda s: None)
    assert len(state) == 1


def test_a_failed_try_keeps_no_tensor_alive_for_the_rerun():
    import gc
    import weakref

    def attempt():
        q = torch.ones(4)
        alive.append(weakref.ref(q))
        raise torch.OutOfMemoryError("out of memory")
    alive = []
    try:
        attempt()
    except torch.OutOfMemoryError as e:
        error = e
    sys.last_value = error                          # as pytest's runner leaves it
    try:
        gc.collect()
        assert alive[0]() is not None               # the traceback's frame holds q
        suite.forget_failure(error)
        gc.collect()
        assert alive[0]() is None and not hasattr(sys, "last_value")
    finally:
        sys.__dict__.pop("last_value", None)


def test_suite_reruns_a_test_that_ran_out_of_memory_and_counts_it(tmp_path):
    """The conftest in a pytest run of its own: one test runs out of memory once, one always, one fails."""
    shutil.copytree(SHIM / "flash_attn", tmp_path / "flash_attn")
    shutil.copy(SHIM / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_flash_attn.py").write_text(
        "import pathlib, torch\n"
        "MARK = pathlib.Path(__file__).with_name('ran_once')\n"
        "def test_flash_attn_bwd_transpose():\n"
        "    if not MARK.exists():\n"
        "        MARK.write_text('x')\n"
        "        raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 2.00 MiB')\n"
        "def test_flash_attn_bwd_overflow():\n"
        "    raise RuntimeError('CUDA error: out of memory')\n"
        "def test_flash_attn_bwd_varlen_overflow():\n"
        "    assert 1 == 2\n")
    env = {**os.environ, "FA_SUITE_OOM_WAITS": "0,0", "FA_SUITE_SUMMARY": str(tmp_path / "s.json"),
           "PYTHONPATH": f"{tmp_path}:{ROOT / 'python'}"}
    env.pop("FA_SUITE_CPU", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_flash_attn.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    summary = json.loads((tmp_path / "s.json").read_text())
    assert (summary["passed"], summary["failed"]) == (1, 2), done.stdout[-2000:]
    assert summary["out_of_memory"] == 1 and summary["passed_after_oom_rerun"] == 1
    assert {f["test"].split("::")[1] for f in summary["failures"]} == {"test_flash_attn_bwd_overflow",
                                                                       "test_flash_attn_bwd_varlen_overflow"}


def test_only_the_controller_writes_the_summary(tmp_path, monkeypatch):
    """An xdist worker's terminal summary holds only its own tests: it must not write summary.json."""
    monkeypatch.setenv("FA_SUITE_SUMMARY", str(tmp_path / "s.json"))
    passed = types.SimpleNamespace(when="call", user_properties=[], longreprtext="")
    reporter = types.SimpleNamespace(stats={"passed": [passed]}, write_line=lambda line: None)
    worker = types.SimpleNamespace(workerinput={"workerid": "gw0"}, rootpath=tmp_path)
    suite.pytest_terminal_summary(reporter, 0, worker)
    assert not (tmp_path / "s.json").exists()
    suite.pytest_terminal_summary(reporter, 0, types.SimpleNamespace(rootpath=tmp_path))
    assert json.loads((tmp_path / "s.json").read_text())["passed"] == 1
