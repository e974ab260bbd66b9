"""Runs flash-attn 2.8.3's own tests/test_flash_attn.py against fa_ck through the flash_attn shim.

tools/flash_attn_suite.sh copies this file to the shim's root. It selects the tests that fit one
10-minute GPU call (select() below), skips those that need what fa_ck lacks, with the reason, and
writes the counts to summary.json beside it. FA_SUITE_CPU=1 is the CPU mode: the test module's
"cuda" becomes "cpu" (the runner's copy), the kernels run in the Triton interpreter and only a few
small cases run; it finds API mismatches, it is no substitute for the GPU run.
"""
import contextlib
import gc
import json
import os
import sys
import time
import traceback
import types
import zlib
from collections import Counter
from pathlib import Path

CPU = os.environ.get("FA_SUITE_CPU") == "1"
if CPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")    # read when fa_ck's kernels are decorated, so before fa_ck loads

import pytest  # noqa: E402
import torch  # noqa: E402

# The groups: output, qkvpacked, varlen, causal, local, alibi, softcap, dropout, deterministic,
# splitkv, the overflow cases, race_condition; local/alibi/softcap/dropout are parameters of these tests.
FUNCTIONS = (
    "test_flash_attn_qkvpacked",
    "test_flash_attn_varlen_qkvpacked",
    "test_flash_attn_output",
    "test_flash_attn_varlen_output",
    "test_flash_attn_causal",
    "test_flash_attn_varlen_causal",
    "test_flash_attn_splitkv",
    "test_flash_attn_kvcache",
    "test_flash_attn_race_condition",
    "test_flash_attn_bwd_overflow",
    "test_flash_attn_bwd_transpose",
    "test_flash_attn_bwd_varlen_overflow",
    "test_flash_attn_deterministic",
    "test_flash_attn_varlen_deterministic",
)
HEAD_DIMS = (59, 128, 256)
# One in KEEP_ONE_IN[fn] of a test's cases, by a CRC of the test id (stable across machines): the
# selection then fits one 10-minute GPU call from a cold Triton cache (docs/flash-attn-suite.md).
KEEP_ONE_IN = {"test_flash_attn_output": 48, "test_flash_attn_varlen_output": 48, "test_flash_attn_kvcache": 384,
               "test_flash_attn_qkvpacked": 6, "test_flash_attn_varlen_qkvpacked": 6, "test_flash_attn_splitkv": 6,
               "test_flash_attn_varlen_causal": 3, "test_flash_attn_deterministic": 3,
               "test_flash_attn_varlen_deterministic": 3, "test_flash_attn_race_condition": 4}
# CPU mode: head dim 59 (the overflow tests' 16), float16, each test's smallest sequence pair, and
# each feature alone: cases where at most one parameter is off its plain value.
CPU_HEAD_DIMS = (59, 16)
# 250 calls of batch 60 each, or 50 backward passes each: hours in the interpreter
CPU_SKIP = ("test_flash_attn_race_condition", "test_flash_attn_deterministic", "test_flash_attn_varlen_deterministic")
PLAIN = (False, 0.0, None, "mha", torch.float16)   # True == 1, so no 1 here
# Per test: parameters whose plain value is another (kvcache's plain case appends new keys), and one more
# case with its own plain values, whose other parameters are each taken alone too (kvcache: rotary with
# rotary_dim < head_dim, 64 queries so that the causal rule for q's positions shows).
CPU_PLAIN = {"test_flash_attn_kvcache": {"new_kv": True}}
CPU_ALSO = {"test_flash_attn_kvcache": {"seqlen_q": 64, "seqlen_k": 256, "new_kv": True, "rotary_fraction": 0.5}}
# Seconds to wait before each rerun of a test that ran out of GPU memory: the workers share one GPU, and a
# neighbour's large case passes (FA_SUITE_OOM_WAITS, comma-separated; empty: no rerun).
OOM_WAITS = tuple(float(w) for w in os.environ.get("FA_SUITE_OOM_WAITS", "3,10").split(",") if w.strip())


def _fn_name(name: str) -> str:
    return name.split("[", 1)[0]


def _size(p: dict):
    q, k = p.get("seqlen_q", p.get("seqlen")), p.get("seqlen_k", p.get("seqlen"))
    return None if q is None else (q * k, q, k)


def select(items, cpu: bool = False):
    """(selected, deselected) of pytest items (anything with .name and, when parametrized, .callspec.params).

    GPU: the functions in FUNCTIONS at head dims 59, 128 and 256 (a test none of whose head dims is one
    of these, like the overflow tests' 16/32/64, keeps its own), both dtypes, every other parameter,
    thinned by KEEP_ONE_IN. CPU: the far smaller set described at CPU_HEAD_DIMS."""
    params = [getattr(getattr(it, "callspec", None), "params", {}) for it in items]
    fns = [_fn_name(it.name) for it in items]
    dims, smallest = {}, {}
    for fn, p in zip(fns, params):
        if "d" in p:
            dims.setdefault(fn, set()).add(p["d"])
        if _size(p) is not None:
            smallest[fn] = min(smallest.get(fn, _size(p)), _size(p))
    selected, deselected = [], []
    for it, fn, p in zip(items, fns, params):
        wanted = CPU_HEAD_DIMS if cpu else HEAD_DIMS
        at_wanted_dim = "d" not in p or not dims[fn] & set(wanted) or p["d"] in wanted
        keep = fn in FUNCTIONS and not (cpu and fn in CPU_SKIP) and at_wanted_dim
        if keep and not cpu and fn in KEEP_ONE_IN:
            keep = zlib.crc32(it.name.encode()) % KEEP_ONE_IN[fn] == 0
        if keep and cpu:
            keep = p.get("dtype", torch.float16) == torch.float16 and _cpu_case(fn, p, smallest.get(fn))
        (selected if keep else deselected).append(it)
    return selected, deselected


def _off(p: dict, plain: dict) -> list:
    """The parameters of p off their plain value (plain[name], else one of PLAIN); sizes never count."""
    return [k for k, v in p.items() if k not in ("d", "seqlen", "seqlen_q", "seqlen_k")
            and (v != plain[k] if k in plain else v not in PLAIN)]


def _cpu_case(fn: str, p: dict, smallest) -> bool:
    """At most one feature on: at the test's smallest size, or in its CPU_ALSO case."""
    if _size(p) == smallest and len(_off(p, CPU_PLAIN.get(fn, {}))) <= 1:
        return True
    also = CPU_ALSO.get(fn)
    return also is not None and all(p.get(k) == v for k, v in also.items()) and len(_off(p, also)) <= 1


def interleaved(items):
    """The tests in turns, one of each function at a time: a run cut short still covers every function."""
    per_fn: dict = {}
    for it in items:
        per_fn.setdefault(_fn_name(it.name), []).append(it)
    queues = list(per_fn.values())
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def _paged_kv_supported() -> bool:
    """Whether fa_ck's varlen call takes a block_table (a paged KV cache); fa_ck refuses one first thing.
    (flash_attn_with_kvcache takes one: its paged cases always run.)"""
    from flash_attn import flash_attn_varlen_func
    t = torch.empty(1, 1, 8, device="meta", dtype=torch.float16)
    cu = torch.zeros(2, device="meta", dtype=torch.int32)
    try:
        flash_attn_varlen_func(t, t, t, cu, cu, 1, 1, block_table=torch.zeros(1, 1, dtype=torch.int32))
    except NotImplementedError:
        return False
    except Exception:  # noqa: BLE001 - any other error means the block_table got past the refusal
        return True
    return True


def skip_reason(name: str, params: dict, has_paged_varlen: bool):
    """Why fa_ck cannot run this test yet, or None."""
    paged = params.get("paged_kv_block_size") is not None
    if paged and "kvcache" not in _fn_name(name) and not has_paged_varlen:
        return "needs a paged KV cache (block_table) in flash_attn_varlen_func, which fa_ck does not have yet"
    return None


def pytest_configure(config):
    if not torch.cuda.is_available():     # CPU mode, or counting the GPU selection on a CPU with --collect-only
        stand_in_for_gpu_queries()


def stand_in_for_gpu_queries():
    """Where there is no GPU, answer the test module's questions about "cuda" (which would raise) as for the
    sm90 card of the GPU run, and let flash-attn's rotary reference (a Triton kernel, run by the interpreter)
    enter torch.cuda.device(None) for a CPU tensor; anything else goes to torch as before."""
    capability, properties, cuda_device = (torch.cuda.get_device_capability, torch.cuda.get_device_properties,
                                           torch.cuda.device)
    if getattr(capability, "_fa_suite", False):
        return

    def device(index):
        return contextlib.nullcontext() if index is None else cuda_device(index)

    def get_device_capability(device=None):
        return (9, 0) if device == "cuda" else capability(device)      # is_sm90 picks the GPU run's checks

    def get_device_properties(device=None):      # the OOM guards skip nothing on an 80 GB card
        return types.SimpleNamespace(total_memory=80 * 2**30) if device == "cuda" else properties(device)

    get_device_capability._fa_suite = True
    torch.cuda.get_device_capability, torch.cuda.get_device_properties = get_device_capability, get_device_properties
    torch.cuda.device = device


def pytest_collection_modifyitems(session, config, items):
    selected, deselected = select(items, cpu=CPU)
    has_paged_varlen = _paged_kv_supported()
    for it in selected:
        why = skip_reason(it.name, getattr(getattr(it, "callspec", None), "params", {}), has_paged_varlen)
        if why:
            it.add_marker(pytest.mark.skip(reason=why))
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = interleaved(selected)
    config._fa_suite_selected = Counter(_fn_name(it.name) for it in selected)


def pytest_report_collectionfinish(config, start_path, items):
    per_fn = getattr(config, "_fa_suite_selected", Counter())
    lines = [f"flash_attn suite ({'CPU' if CPU else 'GPU'} selection): {len(items)} tests"]
    lines += [f"  {fn}: {n}" for fn, n in sorted(per_fn.items())]
    return lines


def is_out_of_memory(error: BaseException) -> bool:
    """torch's allocator, a CUDA call (torch.AcceleratorError) or Triton's module load out of GPU memory."""
    return isinstance(error, torch.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "out of memory" in str(error).lower())


def forget_failure(error: BaseException | None = None):
    """Drop what keeps a failed test's tensors alive: its frames' locals (held by the error's traceback) and
    the sys.last_* that pytest's runner sets."""
    if error is not None:
        traceback.clear_frames(error.__traceback__)
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)


def release_gpu_memory():
    """Hand this worker's cached blocks back to the GPU, for the other workers."""
    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def rerun_after_oom(run, waits, release=release_gpu_memory, sleep=time.sleep) -> int:
    """run() again after each wait in `waits` (memory released first) while it runs out of memory; -> the
    reruns it took. Raises the last out-of-memory error when the waits run out, any other error at once."""
    for n, wait in enumerate(waits, 1):
        release()
        sleep(wait)
        try:
            run()
            return n
        except Exception as error:  # noqa: BLE001 - only running out of memory earns another try
            if not is_out_of_memory(error) or n == len(waits):
                raise
            forget_failure(error)
    raise ValueError("rerun_after_oom needs at least one wait")


@pytest.hookimpl(hookwrapper=True, trylast=True)      # innermost: output capture covers the reruns
def pytest_runtest_call(item):
    """A test that ran out of GPU memory runs again once its neighbours may have freed theirs; the count of
    tests that needed it goes to summary.json."""
    outcome = yield
    error = outcome.excinfo[1] if outcome.excinfo else None
    if CPU or error is None or not is_out_of_memory(error) or not OOM_WAITS:
        return
    forget_failure(error)         # else the first try's tensors would stay allocated through the rerun
    del error
    try:
        rerun_after_oom(item.runtest, OOM_WAITS)
    except Exception as last:  # noqa: BLE001 - reported as the test's failure
        if hasattr(outcome, "force_exception"):
            outcome.force_exception(last)
        return
    outcome.force_result(None)
    item.user_properties.append(("oom_rerun", True))     # reaches the summary through xdist's reports


def pytest_runtest_teardown(item, nextitem):
    if not CPU:
        forget_failure()
        release_gpu_memory()    # a worker holds no cached blocks between tests


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):      # an xdist worker knows only its own tests: the controller writes
        return
    stats = terminalreporter.stats
    counts = {k: len(stats.get(k, [])) for k in ("passed", "failed", "skipped", "xfailed", "xpassed", "error")}
    skips = Counter(str(r.longrepr[2]) if isinstance(r.longrepr, tuple) else str(r.longrepr)
                    for r in stats.get("skipped", []))
    failed = stats.get("failed", []) + stats.get("error", [])
    failures = [{"test": r.nodeid, "message": (r.longreprtext.strip().splitlines() or [""])[-1][:400]}
                for r in failed]
    summary = {"mode": "cpu" if CPU else "gpu", "ran": sum(counts.values()),
               "deselected": len(stats.get("deselected", [])), **counts,
               "out_of_memory": sum("out of memory" in r.longreprtext.lower() for r in failed),
               "passed_after_oom_rerun": sum(dict(r.user_properties).get("oom_rerun", False)
                                             for r in stats.get("passed", []) if r.when == "call"),
               "skip_reasons": dict(skips), "failures": failures}
    out = Path(os.environ.get("FA_SUITE_SUMMARY", Path(str(config.rootpath)) / "summary.json"))
    out.write_text(json.dumps(summary, indent=1) + "\n")
    counts_text = ", ".join(f"{k} {v}" for k, v in counts.items())
    terminalreporter.write_line(f"flash_attn suite summary -> {out}: {counts_text}")
