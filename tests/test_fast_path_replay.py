"""The host fast path's replays (fast_path/plans.py): a call whose signature was seen before replays
the launches its slow path made, on its own tensors. Here, on the CPU with an sm90 GPU faked
(tests/fake_sm90.py: launches logged, not run), the replayed launches are compared argument by
argument with the slow path's, and calls that differ in what the slow path decides from are shown
to get their own plan."""
import ctypes
import dataclasses
import importlib
import json
import types
import weakref

import pytest
import torch
from torch.overrides import TorchFunctionMode

import fake_sm90
from fa_ck.params import AttnParams

tb = importlib.import_module("fa_ck.backends.triton")      # (fa_ck.backends is the function)
buffers = importlib.import_module("fa_ck.backends.triton.buffers")
device = importlib.import_module("fa_ck.backends.triton.device")
fp8 = importlib.import_module("fa_ck.backends.triton.fp8")
gluon = importlib.import_module("fa_ck.backends.triton.gluon_launch")
fast_path = importlib.import_module("fa_ck.backends.triton.fast_path")
keyed = importlib.import_module("fa_ck.backends.triton.fast_path.keyed")
plans = importlib.import_module("fa_ck.backends.triton.fast_path.plans")
slots = importlib.import_module("fa_ck.backends.triton.fast_path.slots")
fp_driver = importlib.import_module("fa_ck.backends.triton.fast_path.driver")

_inputs = fake_sm90.inputs
_kernels = fake_sm90.kernel_names


@pytest.fixture
def gpu_path(monkeypatch):
    """The sm90 path on CPU tensors (fake_sm90): the launch log, its .slow the slow paths taken."""
    log = fake_sm90.install(monkeypatch)
    yield log
    fast_path.clear()


def _log_launch(log, on_launch=None):
    """A stand-in for keyed.launch appending to `log` as fake_sm90's does, after on_launch(kernel, args)."""
    def launch(kernel, grid, args, constexprs, compiled=None):
        if on_launch is not None:
            on_launch(kernel, args)
        log.append((kernel, grid, args, constexprs))
    return launch


def _params(q, k, causal=True, scale=None, window_size=(-1, -1), **kw) -> AttnParams:
    """The AttnParams fa_ck's API makes of these arguments (batch layout; causal folded into the window)."""
    left, right = window_size
    if causal:
        right = 0 if right < 0 else min(right, 0)
    return AttnParams(scale=q.shape[-1] ** -0.5 if scale is None else scale, causal=causal,
                      window_left=left if left < k.shape[1] else -1, window_right=right if right < q.shape[1] else -1,
                      **kw)


def _described(entries, known: dict, workspace=None):
    """Launches as comparable values: a tensor (or a host-made descriptor's base) by its role, the
    name in `known` of the very object, a part of `workspace` by its byte offset in it, or for the
    call's fresh tensors the order in which their storage first appears; with shape, strides and
    dtype. Everything else by type and value."""
    fresh = {}

    def tensor(t):
        role = next((name for name, obj in known.items() if t is obj), None)
        if role is None and workspace is not None and \
                t.untyped_storage().data_ptr() == workspace.untyped_storage().data_ptr():
            role = f"workspace+{t.data_ptr() - workspace.data_ptr()}"
        if role is None:
            role = fresh.setdefault(t.data_ptr(), f"fresh{len(fresh)}")
        return role, tuple(t.shape), t.stride(), t.dtype

    def value(a):
        if isinstance(a, torch.Tensor):
            return ("tensor", *tensor(a))
        if not gluon.GLUON_ERROR and isinstance(a, gluon.TensorDescriptor):
            return ("descriptor", tensor(a.base), list(a.shape), list(a.strides), list(a.block_shape), a.layout,
                    a.padding, getattr(a, "round_f32_to_tf32", None))   # (not in Triton 3.6)
        return type(a), a

    out = []
    for entry in entries:
        if entry == "set_allocator":
            out.append(entry)
            continue
        kernel, grid, args, constexprs = entry
        out.append((kernel, grid, [value(a) for a in args], {n: (type(c), c) for n, c in constexprs.items()}))
    return out


def _placeholders():
    dummy, no_slopes, no_rng = buffers.placeholders(torch.device("cpu"))
    return dict(dummy=dummy, no_slopes=no_slopes, no_rng=no_rng)


def _forward(log, q, k, v, p):
    """(described launches of one forward, whether it took the slow path)."""
    start, slow = len(log), len(log.slow)
    out, lse = tb.forward(q, k, v, p)      # (named: a replay must write this call's outputs)
    return _described(log[start:], dict(q=q, k=k, v=v, out=out, lse=lse, **_placeholders())), len(log.slow) > slow


def _backward(log, q, k, v, p):
    """(described launches of one backward, whether it took the slow path); its forward outside."""
    out, lse = tb.forward(q, k, v, p)
    do = torch.randn_like(out)
    start, slow = len(log), len(log.slow)
    dq, dk, dv = tb.backward(do, q, k, v, out, lse, p)
    known = dict(q=q, k=k, v=v, do=do, out=out, lse=lse, dq=dq, dk=dk, dv=dv, **_placeholders())
    return _described(log[start:], known), len(log.slow) > slow


def _record_buffers(monkeypatch) -> list:
    """Each fp8_buffers tuple made (the slow path makes a second, with q8, where the kernel reads q8,
    once it has let the first go)."""
    made = []
    real_buffers = fp8.fp8_buffers

    def record(*args, **kwargs):
        made.append(real_buffers(*args, **kwargs))
        return made[-1]
    monkeypatch.setattr(fp8, "fp8_buffers", record)
    return made


def _workspaces(monkeypatch, on_gpu=None) -> list:
    """Every fp8 workspace made (fp8.fp8_workspace), each filled with 0x7f bytes first (an amax the
    zero step missed is not zeros); on_gpu (a list, tested when one is made): a true first item
    makes them pass for a GPU's (is_cuda), so a replay zeroes through the driver."""
    made = []
    real = fp8.fp8_workspace

    def workspace(nbytes, dev):
        made.append(real(nbytes, dev))
        with torch._C.DisableTorchFunction():                  # (not among the tensors _Counting counts)
            made[-1].fill_(0x7f)
            if on_gpu and on_gpu[0]:
                made[-1] = made[-1].as_subclass(_LooksOnGPU)
        return made[-1]
    monkeypatch.setattr(fp8, "fp8_workspace", workspace)
    return made


class _LooksOnGPU(torch.Tensor):
    is_cuda = True


class _Counting(TorchFunctionMode):
    """The torch calls that returned a tensor, by name (a tensor made: an allocation or a view)."""

    def __init__(self):
        super().__init__()
        self.made = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if isinstance(result, torch.Tensor):
            self.made.append(func.__name__)
        return result


# ---------------------------------------------------------------------------- 16-bit calls

FORWARDS = {   # (inputs, causal, FA_CK_TRITON_CONFIG, whether it sets the TMA allocator)
    "gluon-d128-causal": (dict(d=128), True, "", False),           # host-made descriptors
    "gluon-d64-full": (dict(d=64), False, "", False),
    "gluon-d64-causal": (dict(d=64), True, "", False),
    "gluon-no-tma-store": (dict(d=128), True, '{"fwd": {"tma_store": false}}', False),
    "triton-d64-causal": (dict(d=64), True, '{"fwd": {"gluon": false}}', None),    # forward.py
    "triton-tma-d128-gqa": (dict(d=128, hkv=2), True, '{"fwd": {"gluon": false, "tma": true}}', True),
    "gluon-device-descriptors": (dict(d=96), False, '{"fwd": {"host_desc": false}}', True),
    "float32": (dict(d=128, dtype=torch.float32), True, "", None),
}


@pytest.mark.parametrize("case", sorted(FORWARDS))
def test_a_repeated_forward_launches_what_the_slow_path_did(gpu_path, monkeypatch, case):
    shape, causal, config, allocator = FORWARDS[case]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", config)
    first = _inputs(**shape)
    slow, was_slow = _forward(gpu_path, *first, _params(*first[:2], causal))
    assert was_slow
    again = _inputs(**shape)                                   # other tensors of the same signature
    fast, was_slow = _forward(gpu_path, *again, _params(*again[:2], causal))
    assert not was_slow
    assert fast == slow
    kernels = _kernels(slow)
    if case.startswith(("gluon", "triton")):
        assert ("fwd_gluon_kernel" if case.startswith("gluon") else "fwd_kernel") in kernels
    if allocator is not None:                                  # (the replay sets it where the slow path did)
        assert (kernels[0] == "set_allocator") == allocator


BACKWARDS = {   # (inputs, causal, FA_CK_TRITON_CONFIG)
    "gluon-one-pass-d128-causal": (dict(d=128), True, '{"bwd_dkdv": {"one_pass": true, "host_desc": false}}'),
    "gluon-one-pass-d128-full": (dict(d=128), False, '{"bwd_dkdv": {"one_pass": true}}'),   # dQ's buffer described
    "gluon-one-pass-d64-full": (dict(d=64), False, '{"bwd_dkdv": {"one_pass": true, "from_zero": true}}'),
    "gluon-two-pass-d128": (dict(d=128), True, '{"bwd_dkdv": {"one_pass": false}}'),      # the Gluon dQ kernel
    "gluon-two-pass-triton-dq": (dict(d=64), True, '{"bwd_dkdv": {"one_pass": false}, "bwd_dq": {"gluon": false}}'),
    "triton-d64-full": (dict(d=64), False, '{"bwd_dkdv": {"gluon": false}}'),   # backward.py's dK/dV and dQ
    "gqa-d128": (dict(d=128, hkv=2), True, ""),                # the Gluon dK/dV stepping through q heads
    "gqa-d128-triton-dkdv": (dict(d=128, hkv=2), True, '{"bwd_dkdv": {"gluon": false}}'),
}


@pytest.mark.parametrize("case", sorted(BACKWARDS))
def test_a_repeated_backward_launches_what_the_slow_path_did(gpu_path, monkeypatch, case):
    shape, causal, config = BACKWARDS[case]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", config)
    first = _inputs(**shape)
    slow, was_slow = _backward(gpu_path, *first, _params(*first[:2], causal))
    assert was_slow
    again = _inputs(**shape)
    fast, was_slow = _backward(gpu_path, *again, _params(*again[:2], causal))
    assert not was_slow
    assert fast == slow
    kernels = _kernels(slow)
    one_pass = "dq_from_acc" in kernels                        # (dQ added up by the dK/dV kernel)
    assert kernels[0] == "bwd_preprocess"
    assert one_pass != ("bwd_dq_kernel" in kernels or "bwd_dq_gluon_kernel" in kernels)
    if "one-pass" in case or "two-pass" in case:
        assert one_pass == ("one-pass" in case)


def test_a_gradient_on_lse_enters_between_the_replayed_launches(gpu_path, monkeypatch):
    """With dlse, delta -= dlse runs after bwd_preprocess wrote delta and before the kernels
    that read it, on the fast path as on the slow one."""
    seen = []

    def on_launch(kernel, args):
        if kernel.fn.__name__ == "bwd_preprocess":
            args[2].fill_(1.0)                                 # delta, as the kernel writes it
        elif kernel.fn.__name__ != "dq_from_acc":
            seen.append(args[5].clone())                       # delta, as the dK/dV and dQ kernels read it
    monkeypatch.setattr(keyed, "launch", _log_launch(gpu_path, on_launch))
    cases = ((64, False, '{"bwd_dkdv": {"gluon": false}}'),    # backward.py's two kernels
             (128, True, '{"bwd_dkdv": {"one_pass": true}}'),   # the Gluon one pass
             (128, True, '{"bwd_dkdv": {"one_pass": false}}'))  # the Gluon dK/dV and dQ kernels
    for d, causal, config in cases:
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", config)
        q, k, v = _inputs(d=d)
        p = _params(q, k, causal)
        for _ in range(2):
            out, lse = tb.forward(q, k, v, p)
            dlse = torch.randn_like(lse)
            seen.clear()
            tb.backward(torch.randn_like(out), q, k, v, out, lse, p, dlse=dlse)
            assert seen and all(torch.equal(delta, 1.0 - dlse) for delta in seen)
    assert gpu_path.slow == ["forward", "backward"] * len(cases)      # the second of each replayed


def test_what_the_slow_path_decides_from_gets_its_own_plan(gpu_path, monkeypatch):
    """A call that differs from a remembered one in a config override, the mask, a stride, the
    alignment of a data pointer or which inputs are one tensor launches what its own slow path
    does, not the remembered launches (which differ: else this would prove nothing)."""
    q, k, v = _inputs(sk=64)
    storage = torch.randn(2 * 64 * 4 * 128 + 8, dtype=torch.bfloat16)
    unaligned = storage[1:2 * 64 * 4 * 128 + 1].view(2, 64, 4, 128)   # 2 bytes past 16-byte alignment: no TMA
    assert unaligned.data_ptr() % 16
    x = torch.randn(2, 64, 4, 128, dtype=torch.bfloat16)
    variants = {                                              # name: (q, k, v, _params keywords, config)
        "config": (q, k, v, {}, '{"fwd": {"gluon": false}}'),
        "causal": (q, k, v, dict(causal=False), ""),
        "window": (q, k, v, dict(window_size=(16, 0)), ""),
        "scale": (q, k, v, dict(scale=-0.5), ""),
        "stride": (q, k.transpose(0, 1).contiguous().transpose(0, 1), v, {}, ""),   # same shape, other strides
        "alignment": (unaligned, k, v, {}, ""),
        "one-tensor": (x, x, x, {}, ""),
    }
    for name, (a, b, c, kw, config) in variants.items():
        p = _params(a, b, **kw)
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", config)
        fast_path.clear()
        own, _ = _forward(gpu_path, a, b, c, p)              # what its slow path launches
        fast_path.clear()
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", "")
        remembered, _ = _forward(gpu_path, q, k, v, _params(q, k))
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", config)
        got, was_slow = _forward(gpu_path, a, b, c, p)
        assert was_slow and got == own, name                  # not served the remembered launches
        assert own != remembered, name
        again, was_slow = _forward(gpu_path, a, b, c, p)
        assert not was_slow and again == own, name            # then its own plan


def test_a_plan_recorded_on_one_tensor_for_q_k_and_v_serves_no_other_call(gpu_path):
    """flash_attn_func(x, x, x)'s launches must not pass q where a later call's k and v go."""
    x = torch.randn(2, 64, 4, 128, dtype=torch.bfloat16)
    _forward(gpu_path, x, x, x, _params(x, x))
    q, k, v = _inputs(sk=64)
    got, was_slow = _forward(gpu_path, q, k, v, _params(q, k))
    assert was_slow
    fast_path.clear()
    assert got == _forward(gpu_path, q, k, v, _params(q, k))[0]


def test_calls_with_tensors_among_their_parameters_take_the_slow_path(gpu_path):
    """ALiBi slopes and dropout's RNG state are tensors a plan could not supply: no plan, every call
    slow (forward and backward)."""
    q, k, v = _inputs(d=64)
    for slopes, dropout_p in ((torch.rand(4), 0.0), (None, 0.1)):
        rng = torch.tensor([12345, 0]) if dropout_p else None
        p = _params(q, k, alibi_slopes=slopes, dropout_p=dropout_p, rng=rng)
        assert fast_path.plan_key("fwd", p, False, (q, k, v), ()) is None
        for _ in range(2):
            start = len(gpu_path.slow)
            out, lse = tb.forward(q, k, v, p)
            tb.backward(torch.randn_like(out), q, k, v, out, lse, p)
            assert gpu_path.slow[start:] == ["forward", "backward"]


def test_the_plan_key_covers_every_call_parameter():
    """Each field of AttnParams changes the key, or (tensors) keeps the call on the slow path;
    fp8 changes the key (under the interpreter it keeps the slow path: its quantising ends in a
    torch copy). A new field fails here until plan_key learns it."""
    q = torch.randn(2, 64, 4, 64, dtype=torch.bfloat16)
    p = AttnParams(scale=0.125)
    key = plans.plan_key("fwd", p, False, (q, q, q), (q,))
    assert key is not None
    other = dict(scale=-0.125, causal=True, window_left=3, window_right=0, softcap=5.0, dropout_p=0.25,
                 deterministic=True, max_seqlen_q=7, max_seqlen_k=9, out_dtype=torch.float16, fp8=True)
    slow = dict(alibi_slopes=torch.ones(4), rng=torch.zeros(2, dtype=torch.int64),
                cu_seqlens_q=torch.zeros(3, dtype=torch.int32), cu_seqlens_k=torch.zeros(3, dtype=torch.int32),
                q_descale=torch.ones(2, 4), k_descale=torch.ones(2, 4), v_descale=torch.ones(2, 4))
    for field in dataclasses.fields(AttnParams):
        if field.name == "extra":                              # (read by no backend)
            continue
        assert field.name in other or field.name in slow, f"AttnParams.{field.name}: add it to plan_key"
        changed = plans.plan_key("fwd", dataclasses.replace(p, **{field.name: {**other, **slow}[field.name]}),
                                 False, (q, q, q), (q,))
        if field.name == "fp8" and device.INTERPRET:
            assert changed is None
            continue
        assert (changed is None) if field.name in slow else (changed != key), field.name
    assert plans.plan_key("fwd", AttnParams(scale=-0.0), False, (q, q, q), (q,)) != \
        plans.plan_key("fwd", AttnParams(scale=0.0), False, (q, q, q), (q,))
    # descales among the call's inputs (a caller's fp8 q, k, v: slots of the plan) do not keep it slow
    ds = torch.ones(2, 4)
    assert plans.plan_key("fwd", dataclasses.replace(p, q_descale=ds), False, (q, q, q, ds), (q,)) is not None


def test_the_plan_key_follows_the_environment_read_per_call(monkeypatch):
    """FA_CK_TRITON_CONFIG and poisoning change the key; with FA_CK_FAST_PATH=0 there is none."""
    q = torch.randn(2, 64, 4, 64, dtype=torch.bfloat16)
    p = AttnParams(scale=0.125)
    monkeypatch.delenv("FA_CK_FAST_PATH", raising=False)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", "")
    key = fast_path.plan_key("fwd", p, False, (q, q, q), (q,))
    assert key is not None and fast_path.plan_key("fwd", p, True, (q, q, q), (q,)) != key
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"gluon": false}}')
    assert fast_path.plan_key("fwd", p, False, (q, q, q), (q,)) != key
    monkeypatch.setenv("FA_CK_FAST_PATH", "0")
    assert fast_path.plan_key("fwd", p, False, (q, q, q), (q,)) is None


@pytest.mark.parametrize("kind", ["forward", "backward"])
def test_later_replays_go_straight_to_the_compiled_kernels(gpu_path, monkeypatch, kind):
    """A plan's first replay launches through keyed.launch keying the launch (no compiled kernel
    given) and keeps the compiled kernel it returns; later replays hand it back, so nothing is
    keyed again (Triton's launcher where no driver launch is laid out: here, none)."""
    compiled, given = {}, []
    monkeypatch.setattr(fp_driver.DirectLaunch, "make", classmethod(lambda cls, *a: None))

    def fake_launch(kernel, grid, args, constexprs, done=None):
        given.append(done)
        assert done is None or done is compiled[id(kernel)]
        gpu_path.append((kernel, grid, args, constexprs))
        return compiled.setdefault(id(kernel), object())
    monkeypatch.setattr(keyed, "launch", fake_launch)
    calls, handed = [], []
    for _ in range(3):
        q, k, v = _inputs(d=128)
        p = _params(q, k)
        start = len(given)
        calls.append(_forward(gpu_path, q, k, v, p) if kind == "forward" else _backward(gpu_path, q, k, v, p))
        handed.append(given[start:])
    (slow, was_slow), (first, first_slow), (second, second_slow) = calls
    assert was_slow and not first_slow and not second_slow
    assert first == slow and second == slow
    n = len([e for e in slow if e != "set_allocator"])
    assert handed[0][-n:] == [None] * n and handed[1][-n:] == [None] * n     # the slow path, the first replay
    assert all(done is not None for done in handed[2][-n:])                   # later: the kept kernels


def test_a_plan_takes_parts_of_a_slot_alone_in_its_storage():
    """A launch argument inside a contiguous slot's bytes, the only slot of its storage, is that
    slot's part (byte offset, shape, strides, dtype: Triton's path rebuilds an equal view on the
    next call's slot); inside an input that shares its storage with another, or past a slot's
    bytes, it is no plan's (the next call's inputs may lie apart). A zeroed tensor likewise, and
    only contiguous."""
    kernel = object()
    work, other = torch.zeros(1024, dtype=torch.uint8), torch.zeros(64)
    part = work[256:512].view(torch.float32).view(8, 8).t()
    steps = [(plans.zero_now, work[:16].view(torch.int32)), (kernel, (1,), (part, other, 3), {})]
    plan = plans.Plan.make(steps, [other, work], False)
    assert plan is not None and plan.slot_bytes == {1: 1024}
    (_, zeroed, nbytes), (_, _, fixed, subs, _) = plan.steps
    assert zeroed == slots.Part(1, 0, (4,), (1,), torch.int32) and nbytes == 16
    assert fixed == (None, None, 3) and subs == ((0, slots.Part(1, 256, (8, 8), (1, 8), torch.float32), None),
                                                 (1, 0, None))
    assert slots.slot_offset(subs[0][1]) == (1, 256) and slots.slot_offset(0) == (0, 0)
    again = torch.full((1024,), 0x7f, dtype=torch.uint8)
    rebuilt = slots.tensor_at([other, again], subs[0][1])
    assert rebuilt.data_ptr() == again.data_ptr() + 256 and (rebuilt.stride(), rebuilt.dtype) == ((1, 8), torch.float32)
    assert torch.equal(rebuilt, again[256:512].view(torch.float32).view(8, 8).t())
    plan.replay([other, again], stop=1)                         # the zero step (a CPU tensor: torch's zero_)
    assert (again[:16] == 0).all() and (again[16:] == 0x7f).all()
    x = torch.zeros(2, 64)
    shared = [x[0], x[1]]                                       # two inputs of one storage
    assert plans.Plan.make([(kernel, (1,), (x[1][8:],), {})], shared, False) is None
    assert plans.Plan.make([(kernel, (1,), (work[1000:1100],), {})], [work[:1000]], False) is None   # past its slot
    assert plans.Plan.make([(plans.zero_now, part)], [work], False) is None               # not contiguous


def test_slot_bytes_reach_past_the_last_element_only():
    """nbytes: from the data pointer to past the last element, whatever the strides (a view's
    storage may hold more)."""
    t = torch.zeros(4, 8, dtype=torch.float16)
    assert slots.nbytes(t) == 64 and slots.nbytes(t[:, :2]) == (3 * 8 + 2) * 2 and slots.nbytes(t.t()) == 64
    assert slots.nbytes(t[:0]) == 0


# ---------------------------------------------------------------------------- fp8 calls

@pytest.mark.parametrize("d,causal", [(128, True), (64, False), (48, True), (40, True)])
def test_a_repeated_fp8_forward_launches_what_the_slow_path_did(gpu_path, monkeypatch, d, causal):
    """fp8 of 16-bit inputs: quantising (the amax, then the scaled copy, of q, k and v: one launch
    each) and the fp8 forward replay on the call's own buffers, parts of its own workspace at the
    slow path's offsets (a replay makes the workspace alone, through Triton's path rebuilding the
    parts: equal views), and each call's amax bits are zeros when its amax kernel runs (it folds
    maxima in with atomics; the workspace comes poisoned)."""
    amax_zero = []

    def on_launch(kernel, args):
        if kernel.fn.__name__ == "amax_kernel":
            amax_zero.append(bool((args[3] == 0).all()))          # AMAX_BITS
            args[3].fill_(7)                                       # as the kernel's maxima would
    monkeypatch.setattr(keyed, "launch", _log_launch(gpu_path, on_launch))
    made = _record_buffers(monkeypatch)
    workspaces = _workspaces(monkeypatch)

    def forward(q, k, v, p):
        """_forward's described launches, the parts of this call's workspace by their offset in it."""
        start, slow, n = len(gpu_path), len(gpu_path.slow), len(workspaces)
        out, lse = tb.forward(q, k, v, p)
        known = dict(q=q, k=k, v=v, out=out, lse=lse, **_placeholders())
        return _described(gpu_path[start:], known, workspaces[-1]), len(gpu_path.slow) > slow, len(workspaces) - n
    first = _inputs(d=d)
    p = dataclasses.replace(_params(*first[:2], causal), fp8=True)
    slow, was_slow, _ = forward(*first, p)
    again = _inputs(d=d)
    fast, again_slow, n_workspaces = forward(*again, p)
    assert was_slow and not again_slow and fast == slow
    launches = [e for e in slow if e != "set_allocator"]
    assert _kernels(launches)[:2] == ["amax_kernel", "quantize_kernel"] and len(launches) == 3
    # the slow path: its buffers, made again with q8 where the kernel reads q8 (q not rounded in the
    # kernel); the replay: its workspace alone, the slow path's size
    q_convert = launches[-1][3].get("Q_CONVERT", (bool, False))[1]
    assert len(made) == (1 if q_convert else 2) and n_workspaces == 1
    assert made[-1][-1] is workspaces[-2]                           # (the slow path's, of its buffers)
    assert (made[-1][0] is None) == q_convert and workspaces[-1].numel() == workspaces[-2].numel()
    assert not any(a[0] == "tensor" and a[1].startswith("fresh") for e in launches for a in e[2])
    parts = {a[1] for e in launches for a in e[2] if a[0] == "tensor"} | \
        {a[1][0] for e in launches for a in e[2] if a[0] == "descriptor"}
    assert sum(role.startswith("workspace+") for role in parts) >= 4    # amax, descales, k8, v8 (q8, q's amax)
    assert amax_zero == [True] * 2


class _Driver:
    """libcuda as the direct path calls it, over CPU memory: launches recorded (each pointer
    parameter read back), tensor maps as in test_fast_path_driver.py (the address their first
    word), memsets done (memset_err: what the next one returns instead, untouched)."""

    def __init__(self):
        self.launches, self.memsets, self.memset_err, self.amax_bytes = [], [], 0, 0

    def cuTensorMapReplaceAddress(self, addr, ptr):
        ctypes.memmove(addr, ctypes.c_uint64(ptr).value.to_bytes(8, "little"), 8)
        return 0

    def cuMemsetD8Async(self, ptr, value, nbytes, stream):
        self.memsets.append((ptr, nbytes))
        if self.memset_err:
            return self.memset_err
        ctypes.memset(ptr, value, nbytes)
        return 0

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        kernel, signature = _COMPILED[function]
        values, i = [], 0
        for ty in signature.values():
            if ty == "constexpr":
                continue
            if isinstance(ty, tuple):                           # its items, read back as the launcher laid them
                items = [_C_TYPES[t].from_address(params[i + j]).value
                         for j, t in enumerate(t for t in ty if t != "constexpr")]
                values.append(tuple(items))
                i += len(items)
                continue
            word = ctypes.cast(params[i], ctypes.POINTER(ctypes.c_uint64)).contents.value
            values.append(word if ty.startswith(("*", "tensordesc")) else None)
            i += 1 + (2 * int(ty.split(":")[1]) if ty.startswith("tensordesc") else 0)
        self.launches.append((kernel, values))
        if kernel.fn.__name__ == "amax_kernel":                 # its amax bits: zeros now, its maxima after
            self.launches[-1] += (ctypes.string_at(values[3], self.amax_bytes),)
            ctypes.memset(values[3], 7, self.amax_bytes)
        return 0


_COMPILED: dict = {}
_SCALAR_TYPES = {bool: "i1", int: "i64", float: "fp32"}
_C_TYPES = {"i1": ctypes.c_int8, "i64": ctypes.c_int64, "fp32": ctypes.c_float}


def _tuple_type(items: tuple) -> tuple:
    """A tuple argument's signature as Triton specialises it: an int equal to 1 a constexpr."""
    return tuple("constexpr" if type(x) is int and x == 1 else _SCALAR_TYPES[type(x)] for x in items)


def _tuple_read_back(items: tuple) -> tuple:
    """What the launcher hands the kernel for a tuple argument: its items but the constexprs, as C types."""
    return tuple(_C_TYPES[t](x).value for t, x in zip(_tuple_type(items), items) if t != "constexpr")


def _fake_compiled(kernel, args, constexprs):
    """A compiled kernel as fast_path/driver.py reads one: its signature from the slow path's arguments."""
    signature = {}
    for i, name in enumerate(kernel.arg_names):
        a = args[i] if i < len(args) else None
        if i >= len(args):
            signature[name] = "constexpr"
        elif isinstance(a, torch.Tensor) or a is None:
            signature[name] = "*i8"
        elif isinstance(a, gluon.TensorDescriptor):
            signature[name] = f"tensordesc:{len(a.shape)}"
        elif isinstance(a, tuple):
            signature[name] = _tuple_type(a)
        else:
            signature[name] = _SCALAR_TYPES[type(a)]
    n_maps = sum(isinstance(ty, str) and ty.startswith("tensordesc") for ty in signature.values())
    meta = types.SimpleNamespace(num_ctas=1, launch_pdl=False, launch_cooperative_grid=False, profile_scratch_size=0,
                                 global_scratch_size=0, tensordesc_meta=[{}] * n_maps)
    _COMPILED[len(_COMPILED) + 1] = (kernel, signature)
    return types.SimpleNamespace(src=types.SimpleNamespace(signature=signature), metadata=meta,
                                 packed_metadata=(8, 1, 0), function=len(_COMPILED))


def _fake_libcuda(monkeypatch) -> _Driver:
    """fast_path/driver.py over CPU memory: libcuda _Driver, tensor maps their base address."""
    cuda = _Driver()
    monkeypatch.setattr(fp_driver, "_cuda", cuda)
    monkeypatch.setattr(fp_driver, "make_tensordesc_arg", lambda desc, meta: [desc.base.data_ptr(), *desc.shape,
                                                                              *desc.strides])

    def copy_tensor_map(address):
        buf = fp_driver.TensorMap()
        addr = (ctypes.addressof(buf) + 127) // 128 * 128
        ctypes.memmove(addr, address.to_bytes(8, "little"), 8)
        return buf, addr
    monkeypatch.setattr(fp_driver, "_copy_tensor_map", copy_tensor_map)
    monkeypatch.setattr(plans, "triton_driver", types.SimpleNamespace(active=types.SimpleNamespace(
        get_current_device=lambda: 0, get_current_stream=lambda dev: 5)))
    return cuda


@pytest.mark.skipif(bool(gluon.GLUON_ERROR), reason="no Gluon in this Triton")
@pytest.mark.parametrize("d", [128, 40])
def test_a_replayed_fp8_forward_makes_one_workspace_and_launches_into_it(gpu_path, monkeypatch, d):
    """The replay as on a GPU (the driver faked over CPU memory): the quantisation buffers cost
    one tensor, the workspace; the zero step is a memset of its amax bits (before the amax
    kernel; torch's zero_ where the memset fails); each launch goes straight to the driver, given
    the pointers of the slow path's launches (q, k, v, out, lse, placeholders, and each part of
    the workspace at the slow path's offset in its own). Tensors a replayed call makes: out, lse,
    the workspace (the bf16 forward's: out and lse)."""
    driver = _fake_libcuda(monkeypatch)
    slow_launches = []

    def launch(kernel, grid, args, constexprs, compiled=None):
        if compiled is not None:
            pytest.fail("a launch left the direct path")
        slow_launches.append((kernel, args))
        return _fake_compiled(kernel, args, constexprs)
    monkeypatch.setattr(keyed, "launch", launch)
    on_gpu = [False]
    workspaces = _workspaces(monkeypatch, on_gpu)

    def pointers(values, workspace, known):
        """Pointers as roles: the name of the tensor at that address, or workspace+offset."""
        names = {t.data_ptr(): name for name, t in known.items()}
        return [ptr if ptr is None or isinstance(ptr, tuple)
                else names.get(ptr, f"workspace+{ptr - workspace.data_ptr()}") for ptr in values]

    q, k, v = _inputs(d=d)
    driver.amax_bytes = 4 * fp8.fp8_slots(2, 4, 4)[-1]          # (B, H) int32s of q, k and v
    p = dataclasses.replace(_params(q, k), fp8=True)
    out, lse = tb.forward(q, k, v, p)                           # the slow path
    slow_ws = workspaces[-1]
    expected = []
    for kernel, args in slow_launches:
        # pointers, and each tuple's items (strides, scalars) as the kernel is to read them
        values = [a.data_ptr() if isinstance(a, torch.Tensor) else a.base.data_ptr()
                  if isinstance(a, gluon.TensorDescriptor) else _tuple_read_back(a) if isinstance(a, tuple) else None
                  for a in args]
        expected.append((kernel, pointers(values, slow_ws, dict(q=q, k=k, v=v, out=out, lse=lse, **_placeholders()))))
    assert all(not role.startswith("workspace+-") for _, roles in expected for role in roles if isinstance(role, str))
    assert any(isinstance(role, tuple) for _, roles in expected for role in roles)   # (tuples laid out, checked)
    on_gpu[0] = True
    tb.forward(*_inputs(d=d), p)                                # the first replay: keyed.launch (compiled kept)
    assert len(slow_launches) == 2 * len(expected) and not driver.launches
    tb.forward(*_inputs(d=d), p)                                # the second: each launch laid out for the driver
    for memset_err in (0, 700):
        driver.memset_err = memset_err
        q, k, v = _inputs(d=d)
        n_ws = len(workspaces)
        with _Counting() as counted:
            out, lse = tb.forward(q, k, v, p)
        work = workspaces[-1]
        assert len(workspaces) == n_ws + 1 and driver.memsets[-1] == (work.data_ptr(), driver.amax_bytes)
        # (a failed memset: torch zeroes a view made for it, torch.empty(0).set_(...); set_ goes uncounted)
        assert counted.made == ["empty"] * 3 + (["empty", "zero_"] if memset_err else [])
        got = driver.launches[-len(expected):]
        assert [kernel for kernel, *_ in got] == [kernel for kernel, _ in expected]
        for (kernel, values, *amax), (_, roles) in zip(got, expected):
            assert pointers(values, work, dict(q=q, k=k, v=v, out=out, lse=lse, **_placeholders())) == roles
            assert amax in ([], [bytes(driver.amax_bytes)])    # zeros before the amax kernel
    pb = _params(q, k)
    for _ in range(3):
        tb.forward(q, k, v, pb)
    with _Counting() as counted:
        tb.forward(q, k, v, pb)
    assert counted.made == ["empty"] * 2


@pytest.mark.parametrize("names", [("q_descale", "k_descale", "v_descale"), (), ("k_descale",)],
                         ids=["descales", "no-descales", "k-descale"])
def test_a_repeated_fp8_inputs_forward_replays_on_its_own_descales(gpu_path, monkeypatch, names):
    """A caller's fp8 q, k, v replay: the descales are slots of the plan (each call's own, by
    identity), ones kept per shape standing in for those that did not come (fp8.with_unit_descales:
    the same tensors call after call, so nothing is made per call); and so is the workspace v is
    copied into for the kernel's key order (at the slow path's offset)."""
    f8 = torch.float8_e4m3fn
    workspaces = _workspaces(monkeypatch)

    def call():
        q, k, v = (t.to(f8) for t in _inputs(sk=70))
        ds = {n: torch.rand(2, 4) + 0.5 for n in names}
        p = dataclasses.replace(_params(q, k, True), fp8=True, **ds)
        start, slow, n = len(gpu_path), len(gpu_path.slow), len(workspaces)
        out, lse = tb.forward(q, k, v, p)
        with_ones = fp8.with_unit_descales(p, q, k)             # (the ones this call had)
        descales = {n: getattr(with_ones, n) for n in ("q_descale", "k_descale", "v_descale")}
        # (by name, each tensor once: one kept tensor of ones may stand in for several)
        tensors = list(descales.values())
        distinct = {n: t for i, (n, t) in enumerate(descales.items()) if not any(t is u for u in tensors[:i])}
        known = dict(q=q, k=k, v=v, out=out, lse=lse, **distinct, **_placeholders())
        work = workspaces[-1] if len(workspaces) > n else None
        return _described(gpu_path[start:], known, work), len(gpu_path.slow) > slow, descales, distinct
    slow, was_slow, first, distinct = call()
    fast, again_slow, second, _ = call()
    assert was_slow and not again_slow
    assert fast == slow
    for n in ("q_descale", "k_descale", "v_descale"):           # the ones: the same tensors in both calls
        assert (first[n] is second[n]) == (n not in names)
        if n not in names:
            assert torch.equal(first[n], torch.ones(2, 4))
    launches = [e for e in slow if e != "set_allocator"]
    assert _kernels(launches) == ["keys_for_registers_kernel", "fwd_gluon_kernel"]
    roles = [a[1] for a in launches[-1][2] if a[0] == "tensor"]
    assert set(distinct) <= set(roles) and set(names) <= set(distinct)   # the kernel reads this call's descales
    v_bases = {a[1][0] for a in launches[-1][2] if a[0] == "descriptor" and a[1][0] in ("v", "workspace+0")}
    assert v_bases == {"workspace+0"}
    assert not any(a[1].startswith("fresh") for e in launches for a in e[2] if a[0] == "tensor")


# -------------------------------------------------------- fp8: the buffers a plan's slots are made of

def test_fp8_slow_path_lets_its_first_buffers_go_before_making_them_with_q8(gpu_path, monkeypatch):
    """Where the kernel reads q8 (forward.py's), the slow path makes its buffers again with room
    for q8; by then nothing holds the first ones (else the peak holds k8 and v8 twice)."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"gluon": false}}')
    real, refs, alive = fp8.fp8_buffers, [], []

    def record(*args, **kwargs):
        alive.append(sum(r() is not None for r in refs))
        made = real(*args, **kwargs)
        refs.extend(weakref.ref(t) for t in made if t is not None)
        return made
    monkeypatch.setattr(fp8, "fp8_buffers", record)
    q, k, v = _inputs(d=64)
    tb.forward(q, k, v, dataclasses.replace(_params(q, k, True), fp8=True))
    assert alive == [0, 0] and len(refs) == 2 * 9 + 1         # (the first without q8)


@pytest.mark.parametrize("case", ["quantised", "fp8-inputs", "fp8-inputs-bshd"])
def test_fp8_v_in_the_kernels_key_order(gpu_path, monkeypatch, case):
    """The Gluon fp8 forward keeps P in registers with v's keys in its order: where fa_ck quantises,
    the quantisation launch writes them so (PERMUTE_V); for a caller's fp8 v (keys-contiguous, or
    (B, S, H, D) as it comes) fa_ck copies v so (keys_for_registers_kernel). The kernel reads v
    through a descriptor of the padded length (70 keys -> 80)."""
    f8 = torch.float8_e4m3fn
    q, k, v = _inputs(sk=70)
    caller_v = None
    if case.startswith("fp8-inputs"):
        q, k = q.to(f8), k.to(f8)
        caller_v = v.to(f8) if case == "fp8-inputs-bshd" else \
            fp8.empty_bshd(v.shape, f8, v.device, True).copy_(v.to(f8))    # keys-contiguous, rows padded
        v = caller_v
    tb.forward(q, k, v, dataclasses.replace(_params(q, k, True), fp8=True))
    launches = [e for e in gpu_path if e != "set_allocator"]
    (_, _, args, _), = [e for e in launches if e[0].fn.__name__ == "fwd_gluon_kernel"]
    assert list(args[2].shape) == [2, 4, 128, 80]
    assert [c["PERMUTE_V"] for kernel, _, _, c in launches if kernel.fn.__name__ == "quantize_kernel"] == \
        ([] if caller_v is not None else [True])
    if caller_v is not None:
        # the descriptor's tensor: the caller's v copied into the kernel's key order, zeros past the
        # last key to the padded length, by keys_for_registers_kernel (its bytes: test_fp8)
        got = args[2].base
        (src, dst, *_), = [a for kernel, _, a, _ in launches if kernel.fn.__name__ == "keys_for_registers_kernel"]
        assert src.data_ptr() == caller_v.data_ptr() and src.stride() == caller_v.stride()
        assert got.stride(1) == 1 and dst.data_ptr() == got.data_ptr() and list(dst.shape) == [2, 80, 4, 128]


@pytest.mark.parametrize("case", ["gluon", "misaligned", "fp8-inputs", "forward.py"])
def test_fp8_q_rounded_in_the_gluon_kernel_where_fa_ck_quantises(gpu_path, monkeypatch, case):
    """Where the Gluon fp8 forward can read q through TMA and fa_ck quantises, the quantisation
    launch takes q's amax and descale but writes no q8 (COPY_Q off), and the kernel gets the 16-bit
    q itself with q's amax bits (int32, the buffers' own view) for QD (Q_CONVERT). Where TMA cannot
    read q as it is (misaligned) it gets q8 and q's descales; for a caller's fp8 q there is nothing
    to convert, and forward.py's kernel never gets q unconverted."""
    f8 = torch.float8_e4m3fn
    q, k, v = _inputs(d=64)
    if case == "forward.py":
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"gluon": False}}))
    if case == "fp8-inputs":
        q, k = q.to(f8), k.to(f8)
        v = fp8.empty_bshd(v.shape, f8, v.device, True).copy_(v.to(f8))
    if case == "misaligned":        # one element past a 16-byte boundary
        q = torch.empty(q.numel() + 1, dtype=q.dtype)[1:].view(q.shape).copy_(q)
    p = dataclasses.replace(_params(q, k, True), fp8=True)
    made = _record_buffers(monkeypatch)
    tb.forward(q, k, v, p)
    launches = [e for e in gpu_path if e != "set_allocator"]
    (_, _, args, consts), = [e for e in launches if e[0].fn.__name__ in ("fwd_gluon_kernel", "fwd_kernel")]
    converting = case == "gluon"
    if case == "forward.py":
        assert "Q_CONVERT" not in consts and args[0] is made[-1][0]
    else:
        assert consts["Q_CONVERT"] == converting
        q_arg = args[0].base                       # (host-made descriptors)
        assert q_arg is (q if case in ("gluon", "fp8-inputs") else made[-1][0])
        assert q_arg.dtype == (torch.bfloat16 if converting else f8)
    if case != "fp8-inputs":
        # the buffers the kernel got: the first, or (q8 read) those made with q8 once it was let go
        assert len(made) == (1 if converting else 2)
        bufs = made[-1]
        qd = args[8 if case != "forward.py" else 9]
        assert qd is (bufs[8] if converting else bufs[5])                # QD: q's amax bits, or descales
        assert bufs[8].dtype == torch.int32 and bufs[8].shape == (q.shape[0], q.shape[2])
        assert (bufs[0] is None) == converting                           # no q8 made where none is read
        assert [c["COPY_Q"] for kernel, _, _, c in launches if kernel.fn.__name__ == "quantize_kernel"] == \
            [not converting]
    else:
        assert not made
