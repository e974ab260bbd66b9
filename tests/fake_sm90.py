"""The triton backend's sm90 (H100/H200) path on CPU tensors, for tests that check what it decides
and launches without a GPU: every launch (and every setting of Triton's TMA allocator) is appended
to a log instead of running, and the slow paths taken are listed in the log's .slow."""
import contextvars
import importlib

import torch

tb = importlib.import_module("fa_ck.backends.triton")          # (fa_ck.backends is the function)
device = importlib.import_module("fa_ck.backends.triton.device")
fast_path = importlib.import_module("fa_ck.backends.triton.fast_path")
keyed = importlib.import_module("fa_ck.backends.triton.fast_path.keyed")
plans = importlib.import_module("fa_ck.backends.triton.fast_path.plans")
forward_host = importlib.import_module("fa_ck.backends.triton.forward_host")
backward_host = importlib.import_module("fa_ck.backends.triton.backward_host")


# a call's facts where every Gluon kernel can take its tensors (config.CallSpec's)
GLUON_FACTS = dict(tma_ok=True, q_tma_ok=True, gluon_ok=True, host_desc_ok=True, dkdv_tma_ok=True, dq_tma_ok=True)


class LaunchLog(list):
    slow: list          # the slow paths that ran ("forward", "backward")


def install(monkeypatch, sms: int = 132) -> LaunchLog:
    """Fake an sm90 GPU with `sms` multiprocessors for CPU tensors; -> the launch log."""
    log = LaunchLog()
    monkeypatch.setattr(device, "INTERPRET", False)
    monkeypatch.setattr(device, "arch", lambda dev: "cuda:sm90")
    monkeypatch.setattr(device, "sm_count", lambda dev: sms)
    monkeypatch.setattr(tb, "available", lambda: (True, ""))
    monkeypatch.setattr(tb, "unsupported", lambda q, k, v, p: None)

    def launch(kernel, grid, args, constexprs, compiled=None):
        log.append((kernel, grid, args, constexprs))
    monkeypatch.setattr(keyed, "launch", launch)
    monkeypatch.setattr(plans.triton, "set_allocator", lambda allocator: log.append("set_allocator"))
    if plans._allocation is not None:    # as in a fresh process: no allocator set (an earlier test may have)
        monkeypatch.setattr(plans._allocation, "_allocator",
                            contextvars.ContextVar("_allocator", default=plans._allocation.NullAllocator()))
    for name in ("FA_CK_TRITON_CONFIG", "FA_CK_AUTOTUNE", "FA_CK_FAST_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FA_CK_POISON", "0")    # outputs not cloned after the launches: tests name them
    log.slow = []
    for module, name in ((forward_host, "forward"), (backward_host, "backward")):
        real = module._slow_path
        monkeypatch.setattr(module, "_slow_path",
                            lambda *a, _real=real, _name=name: (log.slow.append(_name), _real(*a))[1])
    fast_path.clear()
    return log


def kernel_names(log) -> list:
    return [e if e == "set_allocator" else e[0].fn.__name__ for e in log]


def launched(log, kernel_name: str) -> list:
    """The (grid, args, constexprs) of each logged launch of the kernel with that name."""
    return [e[1:] for e in log if e != "set_allocator" and e[0].fn.__name__ == kernel_name]


def inputs(b=2, sq=64, sk=80, hq=4, hkv=4, d=128, dtype=torch.bfloat16):
    return tuple(torch.randn(b, s, h, d, dtype=dtype) for s, h in ((sq, hq), (sk, hkv), (sk, hkv)))
