"""The Hopper backward kernels in Gluon (kernels/backward_gluon.py: dK/dV, kernels/dq_gluon.py: dQ):
which calls they serve, their launch geometry and the config checks that guard them (CPU), and their
gradients against the float64 reference on an sm90 GPU in every schedule the knobs reach. On the CPU
they are only compiled for sm90 (tools/triton_compile_check.py's sm90 rows, which CI runs)."""
import dataclasses
import importlib
import json
import math

import pytest
import torch

import fake_sm90
import fa_ck
from attn_check import check, check_varlen, count_calls, record_launches
from conftest import GPU
from fa_ck.backends.triton import gluon_launch, sizes
from fa_ck.backends.triton.backward_host import dq_accumulator
from fa_ck.backends.triton.buffers import placeholders
from fa_ck.backends.triton.config import CallSpec, DkdvConfig, backward_config, candidates, coprime_programs
from fa_ck.backends.triton.kernels.backward import bwd_dq_kernel, dq_from_acc
from fa_ck.params import AttnParams

tb = importlib.import_module("fa_ck.backends.triton")      # (fa_ck.backends is the function)
device = importlib.import_module("fa_ck.backends.triton.device")
fast_path = importlib.import_module("fa_ck.backends.triton.fast_path")
loads = importlib.import_module("fa_ck.backends.triton.kernels.backward_gluon_loads")
SM90 = GPU and torch.cuda.get_device_capability() == (9, 0)
no_gluon = pytest.mark.skipif(bool(gluon_launch.GLUON_ERROR), reason="this Triton has no Gluon Hopper API")
FACTS = fake_sm90.GLUON_FACTS


def spec(d=128, sq=4096, sk=4096, b=1, h=2, hkv=None, dkdv=None, dq=None, **kw) -> CallSpec:
    """An sm90 call whose tensors the Gluon kernels could all take; dkdv, dq: FA_CK_TRITON_CONFIG's."""
    asked = {name: knobs for name, knobs in (("bwd_dkdv", dkdv), ("bwd_dq", dq)) if knobs}
    fields = dict(arch="cuda:sm90", dtype=torch.bfloat16, head_dim=d, batch=b, seqlen_q=sq, seqlen_k=sk, heads_q=h,
                  heads_kv=hkv or h, overrides=json.dumps(asked) if asked else "", **FACTS)
    fields.update(kw)
    return CallSpec(**fields)


def dkdv(**kw) -> DkdvConfig:
    return backward_config(spec(**kw)).dkdv


GLUON = {"gluon": True}
ONE_PASS = {"gluon": True, "one_pass": True, "host_desc": True}


# ---------------------------------------------------------------------------- which calls they serve

def test_gluon_backward_only_on_sm90_and_where_the_kernels_reach():
    """Unasked, the Gluon backward runs on sm90 alone (wgmma and TMA), up to head dim 256, never
    where gluon_ok said no; the dK/dV kernel only with a positive scale (it starts its multiplies
    from -lse / scale), asked or not."""
    for d in (64, 128, 256):
        for arch in ("cuda:sm80", "cuda:sm100", "hip:gfx942", "interpreter"):
            cfg = backward_config(spec(d, arch=arch))
            assert not cfg.dkdv.gluon and not cfg.dkdv.one_pass and not cfg.dq.gluon, (arch, d)
        cfg = backward_config(spec(d, gluon_ok=False, dkdv=GLUON, dq=GLUON))
        assert not cfg.dkdv.gluon and not cfg.dq.gluon
        for scale_positive, want in ((True, True), (False, False)):
            assert dkdv(d=d, scale_positive=scale_positive, dkdv=GLUON).gluon is want


@no_gluon
def test_gluon_dkdv_only_with_a_positive_scale(monkeypatch):
    """On the fake sm90: a zero or negative scale goes to backward.py's dK/dV kernel."""
    log = fake_sm90.install(monkeypatch)
    q, k, v = fake_sm90.inputs(b=1, sq=256, sk=256, hq=2, hkv=2, d=64)
    for scale, want in ((0.2, "bwd_dkdv_gluon_kernel"), (0.0, "bwd_dkdv_kernel"), (-0.2, "bwd_dkdv_kernel")):
        p = AttnParams(scale=scale, causal=True, window_right=0)
        out, lse = tb.forward(q, k, v, p)
        log.clear()
        tb.backward(torch.randn_like(out), q, k, v, out, lse, p)
        names = fake_sm90.kernel_names(log)
        assert want in names and {"bwd_dkdv_gluon_kernel", "bwd_dkdv_kernel"} - {want} - set(names), (scale, names)


def test_gqa_dkdv_through_host_made_descriptors_only():
    """GQA reaches the Gluon dK/dV kernel only through host-made descriptors over every q head (a
    unit steps through its kv head's q heads), whatever host_desc asks; varlen GQA (descriptors
    per sequence) and tensors host descriptors cannot describe go to backward.py."""
    for host in (True, False):
        cfg = dkdv(h=4, hkv=2, dkdv=dict(GLUON, host_desc=host))
        assert cfg.gluon and cfg.host_desc
    assert not dkdv(h=4, hkv=2, varlen=True, dkdv=GLUON).gluon
    assert not dkdv(h=4, hkv=2, host_desc_ok=False, dkdv=GLUON).gluon
    cfg = dkdv(varlen=True, dkdv=dict(GLUON, host_desc=True))          # no GQA: device-made descriptors
    assert cfg.gluon and not cfg.host_desc and not cfg.persistent and not cfg.tma_store


@no_gluon
def test_fake_sm90_backward_launches_host_made_descriptors(monkeypatch):
    """On the fake sm90: q, k, v, dO (and dQ's buffer, in one pass) reach the dK/dV kernel as
    host-made descriptors where asked and for GQA; asked off, the tensors (descriptors built on the
    device, Triton's allocator set first); varlen and expanded GQA take backward.py's kernel."""
    log = fake_sm90.install(monkeypatch)
    q, k, v = fake_sm90.inputs(b=2, sq=256, sk=384, hq=4, hkv=4, d=128)
    p = AttnParams(scale=0.1)
    out, lse = tb.forward(q, k, v, p)

    def dkdv_launch(q, k, v, out, lse, p, host, one_pass=True):
        log.clear()
        knobs = dict(GLUON, host_desc=host, **({"one_pass": True} if one_pass else {}))
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": knobs}))
        tb.backward(torch.randn_like(out), q, k, v, out, lse, p)
        return fake_sm90.launched(log, "bwd_dkdv_gluon_kernel")
    (_, args, c), = dkdv_launch(q, k, v, out, lse, p, True)
    assert c["HOST_DESC"] and c["ONE_PASS"] and all(isinstance(a, gluon_launch.TensorDescriptor) for a in args[:4])
    assert isinstance(args[10], gluon_launch.TensorDescriptor) and not fake_sm90.launched(log, "bwd_dq_gluon_kernel")
    (_, args, c), = dkdv_launch(q, k, v, out, lse, p, False)
    assert not c["HOST_DESC"] and all(isinstance(a, torch.Tensor) for a in args[:4]) and "set_allocator" in log
    kv = (k[:, :, :2], v[:, :, :2])                                              # GQA: 2 q heads per kv head
    (_, args, c), = dkdv_launch(q, *kv, out, lse, p, False)
    assert c["HOST_DESC"] and c["GROUP"] == 2 and isinstance(args[0], gluon_launch.TensorDescriptor)
    expanded = tuple(t[:1].expand(2, -1, -1, -1) for t in kv)
    assert not dkdv_launch(q, *expanded, out, lse, p, True, False) and fake_sm90.launched(log, "bwd_dkdv_kernel")
    cu = torch.tensor([0, 100, 256], dtype=torch.int32)
    pv = dataclasses.replace(p, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=156, max_seqlen_k=156)
    qv, kv_ = q[0], k[0, :256, :2]
    out_v, lse_v = tb.forward(qv, kv_, kv_, pv)
    assert not dkdv_launch(qv, kv_, kv_, out_v, lse_v, pv, True, False) and fake_sm90.launched(log, "bwd_dkdv_kernel")
    (_, _, c), = dkdv_launch(qv, k[0, :256], k[0, :256], out_v, lse_v, pv, True)       # varlen without GQA
    assert c["VARLEN"] and not c["HOST_DESC"]


# ---------------------------------------------------------------------------- launch geometry

def test_persistent_dkdv_programs_cycle_through_every_key_block():
    """A persistent grid's program count is coprime to the key blocks per head (unit u's key
    block is u % key_blocks, program p takes units p, p + P, ...), at most one per SM, and one
    per unit where there are fewer units than SMs."""
    P = coprime_programs
    assert P(6144, 8, 132) == 131 and P(2048, 128, 132) == 131 and P(1000, 3, 132) == 131
    assert P(1000, 1, 132) == 132 and P(1000, 7, 132) == 132 and P(100, 8, 132) == 100
    for units, blocks in ((6144, 8), (4096, 16), (999, 6)):
        p = P(units, blocks, 132)
        assert {u % blocks for u in range(0, units, p)} == set(range(blocks))     # program 0's key blocks


@pytest.mark.parametrize("head_dim, asked, sms, want_programs, want_kv", [
    (64, {}, 4, 3, 2),                      # 16 units on 4 SMs: 3 programs (coprime to 8), two K/V buffers
    (128, {}, 4, 3, 1),                     # d128: one K/V buffer (two would pass 227 KB)
    (64, {}, 16, 16, 1),                    # no more units than SMs: one program per unit
    (64, {"block_m": 128, "num_stages": 3}, 4, 3, 1),      # two buffers would not fit
    (64, {"persistent": False}, 4, 16, 1),
    (64, {"host_desc": False}, 4, 16, 1),   # persistent programs only with host-made descriptors
    (64, {"dynamic": True}, 4, 4, 2),       # units from a counter: one program per SM
    (128, {"dynamic": True}, 4, 4, 1),
    (64, {"dynamic": True}, 16, 16, 1),     # no more units than SMs: not persistent, not dynamic
    (64, {"dynamic": True, "one_pass": False}, 4, 3, 2),   # its counter lies past the one pass's dQ buffer
])
def test_persistent_dkdv_schedule(head_dim, asked, sms, want_programs, want_kv):
    """A persistent grid only with more units than SMs (and host-made descriptors), its program
    count coprime to the key blocks per head; the counter only in one pass; two K and V buffers
    only where shared memory holds them."""
    knobs = {**ONE_PASS, "persistent": True, "dynamic": False, **asked}
    cfg = dkdv(d=head_dim, sq=1024, sk=1024, sm_count=sms, window_right=0, dkdv=knobs)
    persistent = knobs["persistent"] and knobs["host_desc"] and 16 > sms
    assert (cfg.programs, cfg.num_kv, cfg.persistent) == (want_programs, want_kv, persistent)
    assert cfg.dynamic == (persistent and knobs["dynamic"] and knobs["one_pass"])
    assert sizes.dkdv_gluon(head_dim, cfg.block_m, cfg.num_stages, 2, cfg.one_pass, cfg.num_kv,
                            cfg.tma_store) <= sizes.SM90_BYTES


@pytest.mark.parametrize("n_kb,heads,tail", [(8, 6, 2), (32, 16, 9), (3, 5, 5), (4, 3, 0), (1, 4, 3)])
def test_dkdv_units_of_the_last_heads_go_heaviest_first(n_kb, heads, tail):
    """backward_gluon_loads.dealt_unit (its own code, run on ints): the counter's hand-outs deal
    every unit once (unit = head * n_kb + key block, dkdv_tile's numbering); head by head up to
    the tail's first head, then key block by key block across the last `tail` heads, so under a
    causal mask (key block 0 the longest) the tail's units come heaviest first; past the last
    unit, the number itself (the consumers' stop)."""
    dealt = loads.dealt_unit.fn
    n_units = n_kb * heads
    got = [divmod(dealt(u, n_units, n_kb, tail), n_kb) for u in range(n_units)]
    assert sorted(got) == [(h, kb) for h in range(heads) for kb in range(n_kb)]
    first = (heads - tail) * n_kb
    assert got[:first] == [(h, kb) for h in range(heads - tail) for kb in range(n_kb)]
    assert got[first:] == [(h, kb) for kb in range(n_kb) for h in range(heads - tail, heads)]
    assert [dealt(u, n_units, n_kb, tail) for u in (n_units, n_units + 5)] == [n_units, n_units + 5]


@pytest.mark.parametrize("asked, causal, sms, want", [
    ({}, True, 8, 2),                       # 32 units, the last 2 x 8 SMs' worth: 2 of 4 (batch, kv head) pairs
    ({}, True, 4, 1),
    ({}, True, 16, 4),                      # every pair
    ({"persistent": False}, True, 8, 0),    # a program per unit: no counter to deal them
    ({}, False, 8, 0),                      # no causal mask: units weigh alike
    ({"one_pass": False}, True, 8, 0),      # round-robin programs: units fixed in advance
])
def test_dkdv_tail_heads(asked, causal, sms, want):
    """The counter deals the last heads holding 2 x SMs units heaviest first, on causal calls
    whose units it deals (dynamic)."""
    knobs = {**ONE_PASS, "persistent": True, "dynamic": True, **asked}
    cfg = dkdv(d=64, sq=1024, sk=1024, b=2, sm_count=sms, window_right=0 if causal else -1, dkdv=knobs)
    assert cfg.tail_heads == want and (want == 0 or cfg.dynamic)


@no_gluon
def test_fake_sm90_dkdv_launch_carries_its_schedule(monkeypatch):
    """The schedule reaches the kernel: grid, constexprs and the tail_heads argument."""
    log = fake_sm90.install(monkeypatch, sms=8)
    q, k, v = fake_sm90.inputs(b=2, sq=1024, sk=1024, hq=2, hkv=2, d=64)
    p = AttnParams(scale=0.1, causal=True, window_right=0)
    out, lse = tb.forward(q, k, v, p)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": dict(ONE_PASS, persistent=True, dynamic=True)}))
    log.clear()
    tb.backward(torch.randn_like(out), q, k, v, out, lse, p)
    (grid, args, c), = fake_sm90.launched(log, "bwd_dkdv_gluon_kernel")
    kernel = gluon_launch.bwd_dkdv_gluon_kernel
    runtime = [n for i, n in enumerate(kernel.arg_names) if i not in kernel.constexprs]
    assert len(runtime) == len(args)
    named = dict(zip(runtime, args))
    assert grid == (8, 1, 1) and c["PERSISTENT"] and c["DYNAMIC"] and c["ONE_PASS"] and c["NUM_KV"] == 2
    assert named["tail_heads"] == 2 and named["counter_offset"] == q.numel()
    assert fake_sm90.kernel_names(log) == ["bwd_preprocess", "bwd_dkdv_gluon_kernel", "dq_from_acc"]


@no_gluon
def test_dynamic_dkdv_launch_refuses_a_buffer_without_its_counter(monkeypatch):
    """The dynamic schedule's counter lies past dq_acc's elements: a plain zeros buffer (no room
    past its end) is refused before a launch, not handed to an atomic past its end;
    dq_accumulator's is taken."""
    launched = []
    monkeypatch.setattr(fast_path, "launch", lambda *a: launched.append(a))
    b, h, s, d = 1, 2, 1024, 64
    q, k, v, do = (torch.randn(b, s, h, d, dtype=torch.bfloat16) for _ in range(4))
    cfg = dkdv(d=d, sq=s, sk=s, sm_count=4, dkdv=dict(ONE_PASS, persistent=True, dynamic=True))
    assert cfg.dynamic
    cu = placeholders(q.device)[0]
    p = AttnParams(scale=0.1)

    def launch(dq_acc):
        gluon_launch.dkdv(q, k, v, do, torch.zeros(b, h, s), torch.zeros(b, h, s), torch.empty_like(k),
                          torch.empty_like(v), dq_acc, cu, cu, p, cfg, (b, s, s, h, h, d),
                          dict(scale_log2=0.1, window_left=-1, window_right=-1))
    with pytest.raises(AssertionError, match="counter"):
        launch(torch.zeros(q.shape))
    assert not launched
    launch(dq_accumulator(q))
    assert len(launched) == 1


@pytest.mark.parametrize("device_name", [
    pytest.param("cpu", marks=pytest.mark.skipif(GPU, reason="the interpreter runs where there is no GPU")),
    pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not GPU, reason="needs a GPU")])])
def test_dq_from_acc_rounds_as_torch_mul(device_name):
    """backward.dq_from_acc (the one pass's fp32 dQ / scale into the gradient) gives what
    torch.mul(dq_acc, scale, out=dq) does, bit for bit, every element, lengths not a multiple of
    its block. The interpreter's fp32 -> bf16 cast truncates: there bf16 is held to truncation,
    the GPU's to round-to-nearest-even."""
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for n in (1, 255, 256, 1000):
            acc = torch.randn(n, device=device_name) * 300
            want = torch.empty(n, dtype=dtype, device=device_name)
            got = torch.full((n,), float("nan"), dtype=dtype, device=device_name)
            torch.mul(acc, 0.0883883, out=want)
            dq_from_acc[(math.ceil(n / 256),)](acc, got, n, 0.0883883, BLOCK=256)
            if dtype == torch.bfloat16 and device_name == "cpu":    # truncated: the top 16 bits of the fp32 product
                want = ((acc * 0.0883883).view(torch.int32) >> 16).to(torch.int16).view(torch.bfloat16)
            assert torch.equal(got, want), (dtype, n)


def test_dq_accumulator_has_a_zero_counter_past_its_end():
    """The dynamic dK/dV grid's counter: an int32 zero just past dQ's fp32 buffer, which is
    contiguous zeros in q's shape whatever q's strides."""
    q = torch.randn(2, 8, 3, 5, dtype=torch.bfloat16).transpose(1, 2)
    dq_acc = dq_accumulator(q)
    assert dq_acc.shape == q.shape and dq_acc.dtype == torch.float32 and dq_acc.is_contiguous()
    assert dq_acc.storage_offset() == 0 and not dq_acc.any()
    tail = torch.empty(0, dtype=torch.float32).set_(dq_acc.untyped_storage())[dq_acc.numel():]
    assert tail.numel() >= 1 and tail.view(torch.int32)[0].item() == 0


# ---------------------------------------------------------------------------- config checks

def test_dkdv_schedules_need_what_they_stand_on():
    """One pass (dQ by TMA reduce-adds, in any order) never for deterministic calls, and with it
    the counter; TMA stores of dK and dV only through host-made descriptors, up to d128 and where
    TMA can write them."""
    for d in (64, 128):
        cfg = dkdv(d=d, deterministic=True, dkdv=dict(ONE_PASS, persistent=True, dynamic=True))
        assert cfg.gluon and not cfg.one_pass and not cfg.dynamic and backward_config(
            spec(d, deterministic=True, dkdv=ONE_PASS)).dq is not None
        assert backward_config(spec(d, dkdv=ONE_PASS)).dq is None        # one pass: no dQ kernel
    store = dict(GLUON, one_pass=False, tma_store=True)
    assert dkdv(d=128, sq=512, sk=512, dkdv=dict(store, host_desc=True)).tma_store
    assert not dkdv(d=128, sq=512, sk=512, dkdv=dict(store, host_desc=False)).tma_store
    assert not dkdv(d=128, sq=512, sk=512, dkdv=dict(store, host_desc=True), dkdv_tma_ok=False).tma_store
    assert not dkdv(d=256, sq=512, sk=512, dkdv=dict(store, host_desc=True)).tma_store


def test_gluon_dkdv_checks_its_fixed_tiles():
    """The dK/dV kernel's units (128 keys up to d128, 64 past it) and its two warpgroups; one pass
    takes 64 or more queries per step (a wgmma's rows), past d128 64 or 128 and no one pass; tiles
    past shared memory. Each a ValueError naming the knob; every candidate keeps the fixed tiles."""
    with pytest.raises(ValueError, match=r"\['bwd_dkdv'\]: the Gluon kernel has block_n 128 and num_warps 4"):
        dkdv(dkdv=dict(GLUON, block_n=64))
    with pytest.raises(ValueError, match=r"the Gluon kernel has block_n 64 and num_warps 4"):
        dkdv(d=256, dkdv=dict(GLUON, block_n=128))
    for d in (64, 128):
        with pytest.raises(ValueError, match=r"one pass takes 64 or more queries per step \(block_m\), got 32"):
            dkdv(d=d, dkdv=dict(GLUON, one_pass=True, block_m=32))
        for bm in (16, 32):                                       # two passes take them
            assert dkdv(d=d, deterministic=True, dkdv=dict(GLUON, block_m=bm)).block_m == bm
        for tiles in candidates("bwd_dkdv", spec(d), dkdv(d=d, dkdv=GLUON)):
            assert (tiles["block_n"], tiles["num_warps"]) == (128, 4)
    for bm in (16, 32):
        with pytest.raises(ValueError, match=f"past head dim 128 the Gluon dK/dV kernel takes 64 or 128 queries per "
                                             f"step \\(block_m\\), got {bm}"):
            dkdv(d=200, dkdv=dict(GLUON, block_m=bm))
    for asked in (dict(GLUON, one_pass=True), {"one_pass": True}):
        with pytest.raises(ValueError, match=r"past head dim 128 the Gluon dK/dV kernel leaves dQ to its own kernel"):
            dkdv(d=256, dkdv=asked)
    assert dkdv(d=256, deterministic=True, dkdv=GLUON).gluon                 # (no one pass there anyway)
    with pytest.raises(ValueError, match=r"the Gluon dK/dV kernel needs \d+ bytes of shared memory with block_m 128 "
                                         r"and num_stages 2 at head dim 256"):
        dkdv(d=256, dkdv=dict(GLUON, block_m=128))
    assert dkdv(d=256, dkdv=dict(GLUON, block_m=128, num_stages=1)).block_m == 128   # single-buffered: fits
    for tiles in candidates("bwd_dkdv", spec(256), dkdv(d=256, dkdv=GLUON)):
        assert (tiles["block_n"], tiles["num_warps"]) == (64, 4)
    # one pass asked where the Gluon dK/dV kernel does not serve (backward.py has no one pass)
    for kw in (dict(gluon_ok=False), dict(scale_positive=False), dict(arch="cuda:sm80")):
        with pytest.raises(ValueError, match=r"one_pass adds dQ by the Gluon dK/dV kernel's TMA reduce-adds, which "
                                             r"does not serve this call"):
            dkdv(dkdv={"one_pass": True}, **kw)


def test_gluon_dq_checks_its_fixed_tiles():
    """The dQ kernel's 128 queries on two warpgroups, its K / V rings within shared memory (an
    error naming the bytes); its own tiles fit at every head dim."""
    with pytest.raises(ValueError, match=r"\['bwd_dq'\]: the Gluon kernel has block_m 128 and num_warps 4"):
        backward_config(spec(dkdv={"one_pass": False}, dq=dict(GLUON, block_m=64)))
    with pytest.raises(ValueError, match=r"\['bwd_dq'\]: the Gluon dQ kernel needs 328704 bytes of shared memory "
                                         r"with block_n 64 and num_stages 3 at head dim 256"):
        backward_config(spec(256, dq=dict(GLUON, block_n=64, num_stages=3)))
    with pytest.raises(ValueError, match=r"\['bwd_dq'\]: block_m must be a power of two, got 192"):
        backward_config(spec(64, dkdv={"one_pass": False}, dq={"block_m": 192}))
    for d in (16, 32, 64, 96, 128, 160, 192, 256):
        for dtype in (torch.bfloat16, torch.float16):
            for kw in ({}, dict(deterministic=True), dict(window_right=0), dict(h=8, hkv=2)):
                cfg = backward_config(spec(d, dtype=dtype, dkdv=GLUON, dq=GLUON, **kw))
                assert cfg.dkdv.gluon and (cfg.dq is None or cfg.dq.gluon), (d, kw)
                if cfg.dq is not None:
                    assert sizes.dq_gluon(d, cfg.dq.block_n, cfg.dq.num_stages, 2) <= sizes.SM90_BYTES
                    assert cfg.dq.tma_store                                   # (dq_tma_ok here)
    assert not backward_config(spec(dq=GLUON, dkdv={"one_pass": False}, gluon_ok=False)).dq.gluon


@no_gluon
def test_bad_backward_knobs_raise_before_any_launch(monkeypatch):
    """On the fake sm90 a knob the Gluon backward cannot take is a ValueError naming it, and the
    backward launched nothing (not even bwd_preprocess)."""
    log = fake_sm90.install(monkeypatch)
    q, k, v = fake_sm90.inputs(b=1, sq=256, sk=256, hq=2, hkv=2, d=128)
    p = AttnParams(scale=0.1)
    out, lse = tb.forward(q, k, v, p)
    for asked, match in (({"bwd_dkdv": {"block_n": 64}}, "block_n 128 and num_warps 4"),
                         ({"bwd_dkdv": {"one_pass": True, "block_m": 32}}, "one pass takes 64 or more"),
                         ({"bwd_dkdv": {"one_pass": False}, "bwd_dq": {"gluon": True, "block_m": 64}},
                          "block_m 128 and num_warps 4"),
                         ({"bwd_dkdv": {"stage_p": True}}, "unknown keys"),
                         ({"bwd_dkdv": {"persistent": 1}}, "persistent must be true or false")):
        log.clear()
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(asked))
        with pytest.raises(ValueError, match=match):
            tb.backward(torch.randn_like(out), q, k, v, out, lse, p)
        assert not [e for e in log if e != "set_allocator"], asked


# ---------------------------------------------------------------------------- on an sm90 GPU

gpu = pytest.mark.skipif(not SM90 or bool(gluon_launch.GLUON_ERROR), reason="needs an sm90 GPU and Gluon")


def _ask(**knobs):
    return dict(GLUON, **knobs)


# Each dK/dV GPU test runs every way of feeding the kernel: two passes of 32 or 64 queries per step,
# or one pass (dQ added by TMA reduce-adds: no dQ kernel); q, k, v, dO as host-made descriptors or
# built on the device (as for every varlen call); S^T and dP^T from zero or from start values;
# persistent programs, round-robin or from the counter; dK and dV by TMA stores or plain stores.
DKDV_ASKS = {"two_pass_32": _ask(block_m=32, one_pass=False, host_desc=False),
             "two_pass_64": _ask(block_m=64, one_pass=False, host_desc=False),
             "one_pass": _ask(block_m=64, one_pass=True, host_desc=False),
             "one_pass_host_desc": _ask(block_m=64, one_pass=True, host_desc=True),
             "two_pass_32_host_desc": _ask(block_m=32, one_pass=False, host_desc=True),
             "from_zero": _ask(one_pass=True, host_desc=True, from_zero=True),
             "start_values": _ask(one_pass=True, host_desc=True, from_zero=False),
             "from_zero_device_desc": _ask(one_pass=True, host_desc=False, from_zero=True),
             "persistent": _ask(one_pass=True, host_desc=True, persistent=True, dynamic=False),
             "persistent_two_pass": _ask(one_pass=False, host_desc=True, persistent=True),
             "dynamic": _ask(one_pass=True, host_desc=True, persistent=True, dynamic=True),
             "plain_stores": _ask(one_pass=True, host_desc=True, tma_store=False),
             "plain_stores_two_pass_32": _ask(block_m=32, one_pass=False, host_desc=False, tma_store=False)}
# every ask but the plain-store ones takes TMA stores at any length
DKDV_ASKS = {name: {"tma_store": True, **knobs} for name, knobs in DKDV_ASKS.items()}
PROGRAMS = 1        # SMs a persistent ask sees: one program takes every unit


def _dq_launches(monkeypatch):
    """Launches of either dQ kernel (none in one pass)."""
    gluon_dq = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dq_gluon_kernel)
    return gluon_dq, record_launches(monkeypatch, fast_path, bwd_dq_kernel)


@pytest.fixture(params=sorted(DKDV_ASKS))
def gluon_dkdv_calls(request, monkeypatch):
    """Asks for the Gluon dK/dV kernel one way and records its launches. Persistent asks see a GPU
    of PROGRAMS SMs, so that small calls too give a program several units, empty ones among them
    under windows. Afterwards checks that the knobs reached the kernel."""
    asked = DKDV_ASKS[request.param]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": asked}))
    if asked.get("persistent"):
        monkeypatch.setattr(device, "sm_count", lambda dev: PROGRAMS)
    launches = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dkdv_gluon_kernel)
    dq_launches = _dq_launches(monkeypatch)
    yield launches
    for grid, c in launches:
        if not c["VARLEN"] and c["GROUP"] == 1:
            assert c["HOST_DESC"] == asked["host_desc"]
        assert c["ONE_PASS"] == asked["one_pass"] and c["BLOCK_M"] == asked.get("block_m", c["BLOCK_M"])
        assert c["FROM_ZERO"] == asked.get("from_zero", c["FROM_ZERO"])
        assert not c["PERSISTENT"] or (c["HOST_DESC"] and grid[0] <= PROGRAMS)
        assert not c["DYNAMIC"] or (c["PERSISTENT"] and c["ONE_PASS"])
        if "dynamic" in asked:
            assert c["DYNAMIC"] == (c["PERSISTENT"] and asked["dynamic"])
        assert not c["TMA_STORE"] or (c["HOST_DESC"] and c["BLOCK_D"] <= 128 and asked["tma_store"])
    if asked.get("persistent"):
        assert any(c["PERSISTENT"] for _, c in launches)
    if asked["one_pass"]:
        assert not any(dq_launches)                           # dQ came from the dK/dV kernel
    if asked["tma_store"] and asked["host_desc"]:
        assert any(c["TMA_STORE"] for _, c in launches if not c["VARLEN"])


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [
    (2, 1000, 1000, 4, 4, 128), (1, 777, 1531, 2, 2, 64), (2, 1, 300, 2, 2, 128), (1, 300, 1, 2, 2, 64),
    (2, 300, 513, 2, 2, 16),
])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_dkdv_matches_reference(gluon_dkdv_calls, shape, causal):
    check(*shape, dtype=torch.bfloat16, device="cuda", causal=causal, same_precision=True)
    assert gluon_dkdv_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("knobs", [GLUON, DKDV_ASKS["two_pass_32"], DKDV_ASKS["dynamic"]])
@pytest.mark.parametrize("shape", [(2, 1000, 1000, 4, 4, 128), (1, 777, 1531, 2, 2, 64), (3, 1531, 129, 2, 2, 96),
                                   (1, 130, 257, 2, 2, 32)])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_backward_float16(monkeypatch, knobs, shape, causal):
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": knobs, "bwd_dq": GLUON}))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dkdv_gluon_kernel)
    check(*shape, dtype=torch.float16, device="cuda", causal=causal, same_precision=True)
    assert launches


@gpu
@pytest.mark.gpu
# (up to d64 the one-pass kernel takes K from registers)
@pytest.mark.parametrize("window, head_dim", [((64, 0), 128), ((200, 37), 64), ((5, -1), 128)])
def test_gluon_dkdv_windows_and_varlen(gluon_dkdv_calls, window, head_dim):
    check(2, 900, 1100, 2, 2, head_dim, dtype=torch.bfloat16, device="cuda", window_size=window, same_precision=True)
    check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 2, 2, head_dim, dtype=torch.bfloat16,
                 device="cuda", window_size=window, same_precision=True)
    assert gluon_dkdv_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("sq,sk,group", [(4096, 4096, 1), (3000, 4096, 1), (2048, 2048, 1), (1024, 1024, 2)])
def test_gluon_dkdv_counter_on_long_causal_d128(monkeypatch, sq, sk, group):
    """Units from the counter on causal d128 calls, on a GPU seen as 4 SMs, so each program takes
    many (2 kv heads x 8-32 key blocks); the gradients against the float64 reference."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": dict(ONE_PASS, persistent=True, dynamic=True)}))
    monkeypatch.setattr(device, "sm_count", lambda dev: 4)
    launches = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dkdv_gluon_kernel)
    check(1, sq, sk, 2 * group, 2, 128, dtype=torch.bfloat16, device="cuda", causal=True, same_precision=True)
    assert launches and all(c["DYNAMIC"] and c["PERSISTENT"] and grid[0] == 4 for grid, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("sms", [12, 5, 32, 132])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_gluon_dkdv_last_heads_heaviest_first(monkeypatch, sms, head_dim):
    """The counter deals the last heads' units key block by key block across them; GQA (2 q heads
    per kv head, 8 (batch, kv head) pairs of 8 key blocks) on a GPU seen as 12, 5 or 32 SMs: the
    last 3, 2 or all 8 pairs (every hand-out remapped); at 132 SMs a program per unit (64 units),
    no counter; the gradients against the float64 reference."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": dict(ONE_PASS, persistent=True, dynamic=True)}))
    monkeypatch.setattr(device, "sm_count", lambda dev: sms)
    calls = count_calls(monkeypatch, gluon_launch, "dkdv")
    check(2, 1024, 1024, 8, 4, head_dim, dtype=torch.bfloat16, device="cuda", causal=True, same_precision=True)
    (args, _), = calls
    cfg = args[12]
    assert cfg.dynamic == (sms < 64) and cfg.tail_heads == {12: 3, 5: 2, 32: 8, 132: 0}[sms]


def _grads(q, k, v, do, causal):
    return torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=causal), (q, k, v), do)


def _same_units_done(results, one_per_unit):
    """dK and dV bit for bit those of one program per unit; dQ to fp32 summation order (its
    reduce-adds land in another order)."""
    dq1, dk1, dv1 = one_per_unit
    for dq, dk, dv in results:
        assert torch.equal(dk, dk1) and torch.equal(dv, dv1)
        assert (dq.float() - dq1.float()).abs().max().item() <= 2 * dq1.float().abs().max().item() * 2 ** -8


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_gluon_dkdv_persistent_takes_units_in_turn(monkeypatch, causal, head_dim):
    """Persistent programs with several units each (4 x 8 heads x 16 key blocks = 512 units on at
    most one program per SM; the last key block partial), round-robin and from the counter: the
    same gradients as one program per unit; then against the float64 reference."""
    launches = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dkdv_gluon_kernel)
    q, k, v = (torch.randn(4, 2000, 8, head_dim, dtype=torch.bfloat16, device="cuda", requires_grad=True)
               for _ in range(3))
    do = torch.randn_like(q)
    grads = {}
    for persistent, dynamic in ((True, False), (True, True), (False, False)):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(
            {"bwd_dkdv": dict(ONE_PASS, persistent=persistent, dynamic=dynamic)}))
        grads[persistent, dynamic] = _grads(q, k, v, do, causal)
        assert launches[-1][1]["PERSISTENT"] == persistent and launches[-1][1]["DYNAMIC"] == dynamic
        assert (launches[-1][0][0] < 512) == persistent               # programs took several units
    _same_units_done([grads[True, False], grads[True, True]], grads[False, False])
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": dict(ONE_PASS, persistent=True)}))
    check(4, 2000, 2000, 8, 8, head_dim, dtype=torch.bfloat16, device="cuda", causal=causal, same_precision=True)
    assert launches[-1][1]["PERSISTENT"]


@gpu
@pytest.mark.gpu
def test_dynamic_dkdv_replays_and_graphs_start_their_counter_afresh(monkeypatch):
    """The counter lives in dQ's fresh buffer: a replayed plan and each replay of a captured CUDA
    graph start it from zero, so every unit is done once each time (512 units here)."""
    launches = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dkdv_gluon_kernel)
    q, k, v = (torch.randn(4, 2000, 8, 64, dtype=torch.bfloat16, device="cuda", requires_grad=True)
               for _ in range(3))
    do = torch.randn_like(q)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": dict(ONE_PASS, persistent=True, dynamic=True)}))
    # Every call before the capture on a side stream: autograd keeps q, k, v's gradient nodes on
    # the stream of their first backward, and the default stream there would break the capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        first = _grads(q, k, v, do, True)                   # the slow path, recorded
        assert launches[-1][1]["DYNAMIC"] and launches[-1][0][0] < 512
        again = _grads(q, k, v, do, True)                   # the replayed plan
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = _grads(q, k, v, do, True)
    results = [first, again]
    for _ in range(2):
        graph.replay()
        torch.cuda.synchronize()
        results.append([g.clone() for g in captured])
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": dict(ONE_PASS, persistent=False)}))
    one_per_unit = _grads(q, k, v, do, True)
    assert not launches[-1][1]["PERSISTENT"]
    _same_units_done(results, one_per_unit)


ASK_DQ = {"bwd_dq": GLUON, "bwd_dkdv": {"one_pass": False}}


@pytest.fixture
def gluon_dq_calls(monkeypatch):
    """Asks for the Gluon dQ kernel (and two passes, where the dK/dV kernel would add dQ itself)
    and records its launches."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(ASK_DQ))
    yield record_launches(monkeypatch, fast_path, gluon_launch.bwd_dq_gluon_kernel)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [
    (2, 1000, 1000, 4, 4, 128), (1, 2048, 2048, 2, 2, 64), (2, 777, 1531, 4, 2, 96), (3, 1531, 129, 2, 2, 128),
    (2, 1, 300, 2, 2, 128), (1, 300, 1, 2, 2, 64), (1, 130, 257, 6, 2, 32),
])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_dq_matches_reference(gluon_dq_calls, dtype, shape, causal):
    check(*shape, dtype=dtype, device="cuda", causal=causal, same_precision=True)
    assert gluon_dq_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("window", [(64, 0), (200, 37), (5, -1)])
@pytest.mark.parametrize("dkdv_ask", ["two_pass_32", "two_pass_64", "persistent_two_pass", "one_pass_host_desc",
                                      "dynamic"])
def test_gluon_dq_windows_varlen_and_both_kernels(monkeypatch, gluon_dq_calls, window, dkdv_ask):
    check(2, 900, 1100, 4, 2, 128, dtype=torch.bfloat16, device="cuda", window_size=window, same_precision=True)
    check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 2, 2, 128, dtype=torch.bfloat16,
                 device="cuda", window_size=window, same_precision=True)
    assert gluon_dq_calls
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({**ASK_DQ, "bwd_dkdv": DKDV_ASKS[dkdv_ask]}))
    dkdv_calls, before = count_calls(monkeypatch, gluon_launch, "dkdv"), len(gluon_dq_calls)
    check(2, 1000, 1000, 2, 2, 128, dtype=torch.bfloat16, device="cuda", causal=True, same_precision=True)
    one_pass = DKDV_ASKS[dkdv_ask]["one_pass"]
    assert dkdv_calls and (len(gluon_dq_calls) > before) == (not one_pass)   # one pass: no dQ kernel


# Past d128: 64-key units, dK / dV split by columns across the two warpgroups, two passes (dQ by the
# Gluon dQ kernel), each way it can run
WIDE_ASKS = {"default": GLUON,
             "start_values": _ask(from_zero=False),
             "from_zero": _ask(from_zero=True),
             "device_desc": _ask(host_desc=False),
             "persistent": _ask(host_desc=True, persistent=True),
             "128_queries_single_buffered": _ask(block_m=128, num_stages=1)}


@pytest.fixture(params=sorted(WIDE_ASKS))
def wide_backward_calls(request, monkeypatch):
    """One way of running the Gluon backward past d128; records both kernels' launches and checks
    the knobs reached them."""
    asked = WIDE_ASKS[request.param]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": asked, "bwd_dq": GLUON}))
    if asked.get("persistent"):
        monkeypatch.setattr(device, "sm_count", lambda dev: PROGRAMS)
    dkdv_launches = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dkdv_gluon_kernel)
    dq_launches = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dq_gluon_kernel)
    yield dkdv_launches, dq_launches
    assert dkdv_launches and dq_launches and all(c["BLOCK_D"] > 128 and not c["ONE_PASS"] for _, c in dkdv_launches)
    for key in ("from_zero", "block_m"):
        assert all(c[key.upper()] == asked[key] for _, c in dkdv_launches if key in asked)
    assert all(c["HOST_DESC"] == asked["host_desc"] for _, c in dkdv_launches if "host_desc" in asked
               and not c["VARLEN"] and c["GROUP"] == 1)
    if asked.get("persistent"):
        assert any(c["PERSISTENT"] for _, c in dkdv_launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [
    (2, 1000, 1000, 2, 2, 256), (1, 777, 1531, 2, 2, 160), (2, 1, 300, 2, 2, 200), (1, 513, 64, 2, 2, 136),
])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_backward_past_d128_matches_reference(wide_backward_calls, shape, causal):
    check(*shape, dtype=torch.bfloat16, device="cuda", causal=causal, same_precision=True)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("window", [(64, 0), (200, 37), (5, -1)])
def test_gluon_backward_past_d128_windows_and_varlen(wide_backward_calls, window):
    check(2, 900, 1100, 2, 2, 256, dtype=torch.float16, device="cuda", window_size=window, same_precision=True)
    check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 2, 2, 192, dtype=torch.bfloat16,
                 device="cuda", window_size=window, same_precision=True)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_backward_past_d128_gqa_and_persistent_units(monkeypatch, causal):
    """GQA past d128: both Gluon kernels, the dK/dV kernel's units stepping through their q heads.
    Then persistent programs with several 64-key units each (4 x 4 heads x 32 key blocks on one
    program per SM): dK and dV bit for bit those of one program per unit."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": GLUON, "bwd_dq": GLUON}))
    dkdv_launches = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dkdv_gluon_kernel)
    dq_launches = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dq_gluon_kernel)
    check(2, 1000, 1000, 4, 2, 256, dtype=torch.bfloat16, device="cuda", causal=causal, same_precision=True)
    assert dq_launches and dkdv_launches[-1][1]["GROUP"] == 2 and dkdv_launches[-1][1]["HOST_DESC"]
    q, k, v = (torch.randn(4, 2000, 4, 256, dtype=torch.bfloat16, device="cuda", requires_grad=True)
               for _ in range(3))
    do = torch.randn_like(q)
    grads = {}
    for persistent in (True, False):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": _ask(persistent=persistent),
                                                              "bwd_dq": GLUON}))
        grads[persistent] = _grads(q, k, v, do, causal)
        assert dkdv_launches[-1][1]["PERSISTENT"] == persistent and (dkdv_launches[-1][0][0] < 512) == persistent
    for a, b in zip(grads[True], grads[False]):
        assert torch.equal(a, b)


@pytest.fixture
def gqa_dkdv_launches(monkeypatch):
    """The Gluon dK/dV kernel's launches under GQA (asked for), each through host-made descriptors."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": GLUON}))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.bwd_dkdv_gluon_kernel)
    yield launches
    assert launches and all(c["HOST_DESC"] for _, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [
    (2, 1000, 1000, 8, 2, 128), (1, 777, 1531, 6, 2, 64), (2, 300, 513, 4, 1, 256), (1, 130, 257, 6, 3, 32),
    (3, 1531, 129, 4, 2, 96), (2, 1, 300, 4, 2, 128),
])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_dkdv_gqa_matches_reference(gqa_dkdv_launches, dtype, shape, causal):
    check(*shape, dtype=dtype, device="cuda", causal=causal, same_precision=True)
    assert gqa_dkdv_launches[-1][1]["GROUP"] == shape[3] // shape[4]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("window", [(64, 0), (200, 37), (5, -1)])
@pytest.mark.parametrize("asked", ["default", "two_pass", "persistent", "dynamic", "device_desc", "deterministic"])
def test_gluon_dkdv_gqa_windows_and_schedules(monkeypatch, gqa_dkdv_launches, window, asked):
    """GQA with windows: two passes, persistent programs round-robin and from the counter (several
    units each on 4 SMs), per-program descriptors asked for (GQA takes host-made ones regardless)
    and deterministic=True; d64 and d128."""
    over = {"two_pass": {"one_pass": False}, "persistent": {"persistent": True, "dynamic": False},
            "dynamic": {"one_pass": True, "persistent": True, "dynamic": True},
            "device_desc": {"host_desc": False}}.get(asked, {})
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": _ask(**over)}))
    if asked in ("persistent", "dynamic"):
        monkeypatch.setattr(device, "sm_count", lambda dev: 4)
    for d in (64, 128):
        check(2, 900, 1100, 4, 2, d, dtype=torch.bfloat16, device="cuda", window_size=window, same_precision=True,
              deterministic=asked == "deterministic")
        c = gqa_dkdv_launches[-1][1]
        assert c["GROUP"] == 2 and not (c["ONE_PASS"] and asked in ("two_pass", "deterministic"))
        if asked in ("persistent", "dynamic"):
            assert c["PERSISTENT"] and c["DYNAMIC"] == (asked == "dynamic")
