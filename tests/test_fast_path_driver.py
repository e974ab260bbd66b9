"""fast_path/driver.py: a replayed plan's launches straight to cuLaunchKernel.

On the CPU, with the driver faked: the parameter buffer a launch is laid out into, read back
value by value against the kernel's signature (constexprs dropped, a host-made descriptor as its
tensor map, shape and strides, the scratch pointers last), the slots' pointers patched per call,
where Triton's path must be kept, and the fallbacks (a failed launch; laying one out raising, with
a warning). On a GPU: every kind of call fa_ck replays, launched straight to the driver and with
the fast path off (FA_CK_FAST_PATH=0: Triton's own launcher) on the same fresh inputs, gives the
same bits (dq: the one pass adds it up with atomics in any order, so to rounding), and the float64
reference."""
import ctypes
import importlib
import json
import types
import warnings

import pytest
import torch
from conftest import GPU

dl = importlib.import_module("fa_ck.backends.triton.fast_path.driver")
plans = importlib.import_module("fa_ck.backends.triton.fast_path.plans")
keyed = importlib.import_module("fa_ck.backends.triton.fast_path.keyed")


class FakeCuda:
    """libcuda's two entry points the direct path calls, recording what they are given."""

    def __init__(self):
        self.launches, self.replaced, self.fail_with, self.log = [], [], 0, []

    def cuTensorMapReplaceAddress(self, addr, ptr):
        self.replaced.append((addr, ptr))
        ctypes.memmove(addr, ctypes.c_uint64(ptr).value.to_bytes(8, "little"), 8)   # the map's first word
        return 0

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.log.append("launch")
        self.launches.append(dict(function=function, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared,
                                  stream=stream, params=[params[i] for i in range(len(params))]))
        return self.fail_with


class FakeTensor:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


class Scratch(FakeTensor):
    """What the fake allocator hands out: notes in the driver's log when it is freed."""

    def __init__(self, cuda, ptr):
        super().__init__(ptr)
        self.cuda = cuda
        cuda.log.append("alloc")

    def __del__(self):
        self.cuda.log.append("free")


class FakeMap:          # Triton's PyCUtensorMap stand-in, encoded with its base address
    def __init__(self, ptr):
        self.ptr = ptr


def _read(addr, c_type):
    return ctypes.cast(addr, ctypes.POINTER(c_type)).contents.value


@pytest.fixture
def fake(monkeypatch):
    cuda = FakeCuda()
    monkeypatch.setattr(dl, "_cuda", cuda)
    made = []

    def make_tensordesc_arg(desc, meta):
        made.append((desc.base.data_ptr(), meta))
        return [FakeMap(desc.base.data_ptr()), *desc.shape, *desc.strides]

    def copy_tensor_map(cu_map):
        buf = dl.TensorMap()
        addr = (ctypes.addressof(buf) + 127) // 128 * 128
        ctypes.memmove(addr, cu_map.ptr.to_bytes(8, "little"), 8)
        return buf, addr
    monkeypatch.setattr(dl, "make_tensordesc_arg", make_tensordesc_arg)
    monkeypatch.setattr(dl, "_copy_tensor_map", copy_tensor_map)
    monkeypatch.setattr(dl, "_allocation", types.SimpleNamespace(
        _allocator=types.SimpleNamespace(get=lambda: lambda size, align, stream: Scratch(cuda, 0xA000 + size))))
    cuda.made = made
    return cuda


def _compiled(signature, tensordesc_meta=None, scratch=0, **meta):
    metadata = types.SimpleNamespace(num_ctas=1, launch_pdl=False, launch_cooperative_grid=False,
                                     profile_scratch_size=0, global_scratch_size=scratch, global_scratch_align=128,
                                     tensordesc_meta=tensordesc_meta, **meta)
    return types.SimpleNamespace(src=types.SimpleNamespace(signature=signature), metadata=metadata,
                                 packed_metadata=(8, 1, 4096), function=0xF00)


def test_the_parameter_buffer_is_tritons_layout(fake):
    sig = {"x": "*bf16", "fixed": "*fp32", "n": "i32", "one": "constexpr", "big": "i64", "scale": "fp32",
           "flag": "i1", "u8": "u8", "i16": "i16", "u64": "u64", "f64": "fp64",
           "strides": ("i32", "constexpr", ("i64", "fp32")), "BLOCK": "constexpr"}
    kernel = types.SimpleNamespace(arg_names=list(sig))
    placeholder = FakeTensor(0x5000)
    fixed = (None, placeholder, 300, 1, 2 ** 40, 0.5, True, 200, -3, 2 ** 63 + 5, 0.1, (7, 1, (2 ** 40, 0.25)))
    launch = dl.DirectLaunch.make(_compiled(sig), kernel, (3, 4), fixed, ((0, 1, None),), {"BLOCK": 64},
                                  [FakeTensor(0x1000), FakeTensor(0x2000)])
    assert launch is not None
    assert launch(slots=[FakeTensor(0x1000), FakeTensor(0x3000)], stream=77) == 0
    (got,) = fake.launches
    assert got["grid"] == (3, 4, 1) and got["block"] == (256, 1, 1) and got["shared"] == 4096
    assert got["stream"] == 77 and got["function"] == 0xF00
    p = got["params"]
    assert len(p) == 13 + 2                                   # constexprs dropped, tuples flat, two scratch pointers
    assert [_read(p[0], ctypes.c_uint64), _read(p[1], ctypes.c_uint64), _read(p[2], ctypes.c_int32),
            _read(p[3], ctypes.c_int64), _read(p[4], ctypes.c_float), _read(p[5], ctypes.c_int8),
            _read(p[6], ctypes.c_uint8), _read(p[7], ctypes.c_int16), _read(p[8], ctypes.c_uint64),
            _read(p[9], ctypes.c_double), _read(p[10], ctypes.c_int32), _read(p[11], ctypes.c_int64),
            _read(p[12], ctypes.c_float)] == [0x3000, 0x5000, 300, 2 ** 40, 0.5, 1, 200, -3, 2 ** 63 + 5, 0.1,
                                              7, 2 ** 40, 0.25]
    assert _read(p[13], ctypes.c_uint64) == 0 and _read(p[14], ctypes.c_uint64) == 0   # no scratch
    launch(slots=[None, FakeTensor(0x4000)], stream=78)         # the next call's own pointer
    assert _read(fake.launches[-1]["params"][0], ctypes.c_uint64) == 0x4000


def test_a_host_made_descriptor_is_its_tensor_map_shape_and_strides(fake, monkeypatch):
    sig = {"desc": "tensordesc<bf16[64, 128]>", "n": "i32", "out": "*bf16", "BLOCK": "constexpr"}
    kernel = types.SimpleNamespace(arg_names=list(sig))
    desc = types.SimpleNamespace(base=FakeTensor(0x1000), shape=[1024, 128], strides=[128, 1])
    monkeypatch.setattr(dl, "rebased", lambda d, base: types.SimpleNamespace(base=base, shape=d.shape,
                                                                             strides=d.strides))
    launch = dl.DirectLaunch.make(_compiled(sig, tensordesc_meta=[{"swizzle": 3}], scratch=64), kernel, (5,),
                                  (None, 7, None), ((0, 0, desc), (2, 1, None)), {"BLOCK": 32},
                                  [FakeTensor(0x1000), FakeTensor(0x2000)])
    assert launch is not None and fake.made == [(0x1000, {"swizzle": 3})]
    launch([FakeTensor(0x8000), FakeTensor(0x9000)], stream=1)
    p = fake.launches[-1]["params"]
    assert len(p) == 1 + 2 + 2 + 1 + 1 + 2                   # map, shape, strides, n, out, two scratch
    assert fake.replaced[-1] == (p[0], 0x8000)
    assert _read(p[0], ctypes.c_uint64) == 0x8000             # the fake wrote the new address into the map
    assert [_read(p[1], ctypes.c_int32), _read(p[2], ctypes.c_int32), _read(p[3], ctypes.c_int64),
            _read(p[4], ctypes.c_int64), _read(p[5], ctypes.c_int32), _read(p[6], ctypes.c_uint64)] == \
        [1024, 128, 128, 1, 7, 0x9000]
    assert _read(p[7], ctypes.c_uint64) == 0xA000 + 64 * 5    # global scratch: per program, from the allocator
    assert _read(p[8], ctypes.c_uint64) == 0
    assert fake.log[-3:] == ["alloc", "launch", "free"]      # the scratch lives until the launch is queued


@pytest.mark.parametrize("why", ["cluster", "pdl", "cooperative", "profile", "hip", "fp16 scalar", "pointer in a tuple",
                                 "not a map", "map of no slot", "arguments short", "hook", "no cuda", "no nvidia driver module",
                                 "another kind of map", "a map that is not the copy"])
def test_out_of_the_ordinary_launches_keep_tritons_path(fake, monkeypatch, why):
    maps = ("not a map", "map of no slot", "another kind of map", "a map that is not the copy")
    sig = {"x": "tensordesc<bf16[64, 64]>" if why in maps else "*bf16", "s": "fp32"}
    meta = {}
    if why == "cluster":
        meta = dict(num_ctas=2)
    elif why == "pdl":
        meta = dict(launch_pdl=True)
    elif why == "cooperative":
        meta = dict(launch_cooperative_grid=True)
    elif why == "hip":
        meta = dict(target=types.SimpleNamespace(backend="hip"))
    elif why == "profile":
        meta = dict(profile_scratch_size=8)
    elif why == "fp16 scalar":
        sig["s"] = "fp16"
    elif why == "pointer in a tuple":
        sig["s"] = ("*bf16", "i32")
    elif why == "arguments short":
        sig["extra"] = "i32"
    elif why == "hook":
        from triton import knobs
        monkeypatch.setattr(knobs.runtime, "launch_enter_hook", lambda metadata: None)
    elif why == "no cuda":
        monkeypatch.setattr(dl, "_cuda", False)
    elif why == "no nvidia driver module":         # (driver.py's imports failed: another Triton)
        monkeypatch.setattr(dl, "make_tensordesc_arg", None)
    elif why == "another kind of map":             # Triton's tensor map object laid out otherwise
        monkeypatch.setattr(dl, "_copy_tensor_map", lambda cu_map: None)
    elif why == "a map that is not the copy":      # (replacing the copy's address by its own changes it)
        monkeypatch.setattr(dl, "make_tensordesc_arg", lambda desc, meta: [FakeMap(desc.base.data_ptr() + 64),
                                                                           *desc.shape, *desc.strides])
    monkeypatch.setattr(dl, "rebased", lambda d, base: types.SimpleNamespace(base=base, shape=d.shape,
                                                                             strides=d.strides))
    desc_meta = [None] if why == "not a map" else [{"swizzle": 3}] if why in maps else None
    compiled = _compiled(sig, tensordesc_meta=desc_meta)
    for key, value in meta.items():
        setattr(compiled.metadata, key, value)
    desc = types.SimpleNamespace(base=FakeTensor(16), shape=[64, 64], strides=[64, 1])
    subs = ((0, 0, desc if sig["x"].startswith("tensordesc") else None),) if why != "map of no slot" else ()
    # (arguments short: a signature longer than the call)
    kernel = types.SimpleNamespace(arg_names=[name for name in sig if name != "extra"])
    s = (FakeTensor(32), 3) if why == "pointer in a tuple" else 1.0
    assert dl.DirectLaunch.make(compiled, kernel, (1,), (None, s), subs, {}, [FakeTensor(16)]) is None


def _one_launch_plan(monkeypatch):
    """A plan of one launch (x: slot 0, n = 5) whose compiled kernel a replay has had; keyed.launch
    (Triton's launcher) faked -> (the plan, the launches that took Triton's launcher)."""
    sig = {"x": "*fp32", "n": "i32"}
    kernel = types.SimpleNamespace(arg_names=list(sig))
    plan = plans.Plan([(kernel, (1,), (None, 5), ((0, 0, None),), {})], one_pass=False)
    plan.compiled[0] = _compiled(sig)
    ran = []

    def launch(kernel, grid, args, constexprs, compiled=None):
        assert compiled is plan.compiled[0]            # (the compiled kernel: no keying again)
        ran.append(args)
        return compiled
    monkeypatch.setattr(keyed, "launch", launch)
    monkeypatch.setattr(plans, "triton_driver", types.SimpleNamespace(active=types.SimpleNamespace(
        get_current_device=lambda: 0, get_current_stream=lambda device: 9)))
    return plan, ran


def test_a_failed_direct_launch_falls_back_and_stays_on_tritons_path(fake, monkeypatch):
    """A replay whose direct launch returns an error goes through Triton's launcher (keyed.launch
    with the compiled kernel); after an error other than 'no context on this thread' that step
    stays on Triton's path."""
    plan, ran = _one_launch_plan(monkeypatch)
    slots = [FakeTensor(0x100)]
    plan.replay(slots)
    assert len(fake.launches) == 1 and not ran                # direct
    fake.fail_with = dl.CUDA_ERROR_INVALID_CONTEXT
    plan.replay(slots)
    assert len(ran) == 1 and plan.direct[0]                   # this once through Triton, direct next time
    fake.fail_with = 700
    plan.replay(slots)
    assert len(ran) == 2 and plan.direct[0] is False
    plan.replay(slots)
    assert len(fake.launches) == 3 and len(ran) == 3          # no more direct attempts
    assert all(args == (slots[0], 5) for args in ran)


def test_laying_a_launch_out_that_raises_warns_and_keeps_tritons_launcher(fake, monkeypatch):
    """A Triton whose compiled kernels DirectLaunch.make cannot read (it raises): the replay warns
    and launches that step through Triton's launcher, then and on every later replay, without
    trying again or warning again."""
    plan, ran = _one_launch_plan(monkeypatch)
    tried = []

    def make(cls, *args):
        tried.append(1)
        raise AttributeError("'CompiledKernel' object has no attribute 'packed_metadata'")
    monkeypatch.setattr(dl.DirectLaunch, "make", classmethod(make))
    slots = [FakeTensor(0x100)]
    with pytest.warns(RuntimeWarning, match="packed_metadata"):
        plan.replay(slots)
    assert len(ran) == 1 and plan.direct[0] is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan.replay(slots)
    assert len(ran) == 2 and len(tried) == 1 and not fake.launches


def test_with_a_launch_hook_set_a_replay_keeps_tritons_launcher(fake, monkeypatch):
    """A launch hook (a profiler's) is Triton's launcher's to call: no direct launch is laid out
    or made while one is set."""
    from triton import knobs
    plan, ran = _one_launch_plan(monkeypatch)
    monkeypatch.setattr(knobs.runtime, "launch_exit_hook", lambda metadata: None)
    plan.replay([FakeTensor(0x100)])
    assert len(ran) == 1 and plan.direct[0] is None and not fake.launches


# ---------------------------------------------------------------------------- on a GPU

GPU_CASES = [  # (batch, seqlen, heads q, heads kv, head dim, causal, extra keyword arguments)
    (2, 300, 4, 4, 64, True, {}),
    (2, 512, 4, 4, 128, False, {}),
    (2, 256, 4, 2, 128, True, {}),
    (1, 384, 2, 2, 256, True, {}),
    (2, 1024, 4, 4, 64, True, {}),
    (2, 300, 4, 4, 64, False, dict(window_size=(64, 32))),
    (2, 256, 4, 4, 128, True, dict(return_lse=True)),
    (2, 512, 4, 4, 128, True, dict(fp8=True)),
    (2, 300, 4, 2, 64, True, dict(deterministic=True)),
    (2, 200, 4, 4, 96, False, dict(dtype=torch.float16)),
    # tensor maps made on the device: global scratch
    (2, 256, 4, 4, 128, True, dict(config={"fwd": {"host_desc": False}, "bwd_dkdv": {"host_desc": False}},
                                   scratch=True)),
    (2, 256, 4, 4, 128, True, dict(config={"fwd": {"gluon": False, "tma": True}}, scratch=True)),   # forward.py's
    (2, 256, 4, 2, 128, True, dict(config={"bwd_dkdv": {"gluon": False}})),               # backward.py's dK/dV
    (2, 300, 4, 4, 64, False, dict(config={"bwd_dkdv": {"one_pass": False}, "bwd_dq": {"gluon": False}})),
    (2, 256, 4, 4, 128, False, dict(config={"fwd": {"tma_store": False}, "bwd_dkdv": {"tma_store": False}})),
]


def _case_id(case) -> str:
    extra = [f"{kernel}.{name}={value}" for kernel, knobs in case[6].get("config", {}).items()
             for name, value in knobs.items()]
    extra += [f"{key}={value}" for key, value in case[6].items() if key not in ("config", "scratch")]
    return "-".join(map(str, (*case[:6], *extra)))


@pytest.mark.skipif(not GPU, reason="needs a GPU")
@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=_case_id)
def test_direct_launches_give_tritons_bits(monkeypatch, case):
    import fa_ck
    from attn_check import rel_err
    from fa_ck import reference
    b, s, hq, hkv, d, causal, kw = case
    fp8, with_lse, window = kw.get("fp8", False), kw.get("return_lse", False), kw.get("window_size", (-1, -1))
    dtype, deterministic = kw.get("dtype", torch.bfloat16), kw.get("deterministic", False)
    if "config" in kw:
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(kw["config"]))
    monkeypatch.delenv("FA_CK_FAST_PATH", raising=False)
    plans.clear()
    via_triton = []                                            # launches that took Triton's launcher
    real_launch = keyed.launch
    monkeypatch.setattr(keyed, "launch", lambda *a: (via_triton.append(a[0]), real_launch(*a))[1])
    calls = []                                                 # (CUresult, whether the launch had global scratch)
    real_call = dl.DirectLaunch.__call__

    def counted(self, *a):
        err = real_call(self, *a)
        calls.append((err, self.scratch is not None))
        return err
    monkeypatch.setattr(dl.DirectLaunch, "__call__", counted)

    def inputs(seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        return [torch.randn(b, s, h, d, generator=g, device="cuda", dtype=dtype).requires_grad_()
                for h in (hq, hkv, hkv)] + [torch.randn(b, s, hq, d, generator=g, device="cuda", dtype=dtype)]

    def run(q, k, v, do):
        if fp8:
            return fa_ck.flash_attn_fp8_func(q, k, v, causal=causal).detach(), None, None
        lse = None
        if with_lse:                                           # a gradient reaches lse too
            out, lse = fa_ck.attention(*(t.transpose(1, 2) for t in (q, k, v)), causal=causal, return_lse=True)
            out = out.transpose(1, 2)
        else:
            out = fa_ck.flash_attn_func(q, k, v, causal=causal, window_size=window, deterministic=deterministic)
        loss = (out.float() * do.float()).sum() + (lse.sum() if lse is not None else 0)
        grads = torch.autograd.grad(loss, (q, k, v))
        return out.detach(), lse, grads

    for seed in (1, 2):                                        # the slow path, then the compiled kernels kept
        run(*inputs(seed))
    q, k, v, do = inputs(3)                                    # fresh tensors, new addresses
    monkeypatch.setenv("FA_CK_FAST_PATH", "0")                 # Triton's own launcher, no plan
    triton_path = run(q, k, v, do)
    assert not calls
    monkeypatch.delenv("FA_CK_FAST_PATH")
    via_triton.clear()
    direct = run(q, k, v, do)                                  # the second replay: straight to the driver
    assert len(calls) >= (2 if fp8 else 3) and not via_triton, (calls, via_triton)
    assert all(err == 0 for err, _ in calls), calls
    if kw.get("scratch"):
        assert any(scratch for _, scratch in calls), calls
    assert torch.equal(direct[0], triton_path[0])
    if direct[1] is not None:
        assert torch.equal(direct[1], triton_path[1])
    if not fp8:
        dq, dk, dv = direct[2]
        assert torch.equal(dk, triton_path[2][1]) and torch.equal(dv, triton_path[2][2])
        assert torch.equal(dq, triton_path[2][0]) if deterministic else rel_err(dq, triton_path[2][0]) < 1e-3
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, window=window, dtype=torch.float64)
    assert rel_err(direct[0], ref) < (6e-2 if fp8 else 1e-2)
