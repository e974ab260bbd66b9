"""The Triton FA2 kernels against the float64 reference: forward, lse and all three gradients.

On the CPU they run in the interpreter over many small shapes; with a GPU the same file also
runs larger shapes (marked gpu). Around them: the NaN canaries, what TMA can address, the
backward's temporaries, and the configs that guard against faults (checked for every head dim)."""
import dataclasses
import importlib
import json
import os

import pytest
import torch

import fa_ck
import fake_sm90
from attn_check import check, check_varlen, record_launches
from conftest import DEVICE, GPU
from fa_ck.params import AttnParams

tb = importlib.import_module("fa_ck.backends.triton")          # (fa_ck.backends is the function)
buffers = importlib.import_module("fa_ck.backends.triton.buffers")
config = importlib.import_module("fa_ck.backends.triton.config")
device = importlib.import_module("fa_ck.backends.triton.device")
fast_path = importlib.import_module("fa_ck.backends.triton.fast_path")
keyed = importlib.import_module("fa_ck.backends.triton.fast_path.keyed")
backward_host = importlib.import_module("fa_ck.backends.triton.backward_host")
forward_kernels = importlib.import_module("fa_ck.backends.triton.kernels.forward")
backward_kernels = importlib.import_module("fa_ck.backends.triton.kernels.backward")

SEQS = [1, 7, 16, 33, 64, 100, 130]
DIMS = [16, 32, 40, 64, 80]
GROUPS = [1, 2, 4]


def _cases():
    """Every seq, head dim, group and causal setting appears, Sq == Sk and Sq != Sk."""
    cases, n = [], 0
    for i, sq in enumerate(SEQS):
        for sk in (sq, SEQS[(i + 3) % len(SEQS)]):
            for causal in (False, True):
                cases.append((sq, sk, DIMS[n % len(DIMS)], GROUPS[n % len(GROUPS)], causal))
                n += 1
    return cases


@pytest.mark.parametrize("sq,sk,d,group,causal", _cases())
def test_fwd_bwd_fp32(sq, sk, d, group, causal):
    # (one batch entry where both sequences are long: the interpreter's time goes with Sq x Sk)
    check(1 if sq * sk > 64 * 64 else 2, sq, sk, 2 * group, 2, d, causal=causal, device=DEVICE)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("sq,sk,d,group,causal", [(33, 33, 64, 2, True), (100, 64, 40, 1, False),
                                                   (16, 130, 80, 4, True)])
def test_fwd_bwd_half(dtype, sq, sk, d, group, causal):
    check(1, sq, sk, 2 * group, 2, d, dtype=dtype, causal=causal, device=DEVICE)


@pytest.mark.parametrize("d", [8, 111, 96, 128])
def test_odd_and_large_head_dims(d):
    check(1, 40, 37, 2, 1, d, causal=True, device=DEVICE)


@pytest.mark.parametrize("d", [160, 192, 224, 256])
def test_head_dims_up_to_256(d):
    check(1, 20, 24, 1, 1, d, grads=d == 256, device=DEVICE)


@pytest.mark.gpu
@pytest.mark.bigmem
@pytest.mark.skipif(not GPU, reason="needs a GPU")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("s,d,group,causal", [(1024, 64, 1, True), (2048, 128, 4, False), (4096, 128, 2, True),
                                              (16384, 64, 1, True), (1000, 256, 2, True), (777, 96, 1, False),
                                              (4096, 256, 1, False)])
def test_gpu_large(dtype, s, d, group, causal):
    b = max(1, 16384 // s // 4)
    check(b, s, s, 4 * group if d < 256 else 2 * group, 4 if d < 256 else 2, d, dtype=dtype,
          causal=causal, device=DEVICE)


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a GPU")
@pytest.mark.parametrize("sq,sk", [(1, 4096), (128, 8192), (4096, 1000)])
def test_gpu_unequal(sq, sk):
    check(2, sq, sk, 8, 2, 128, dtype=torch.bfloat16, causal=True, device=DEVICE)


# ------------------------------------------------------------------ NaN canaries

def test_poison_mode_catches_writes_past_an_output():
    """The NaN canaries around outputs (FA_CK_POISON=1, set by conftest) are checked: a write one
    element past the end is reported."""
    assert buffers.poisoning()
    out = buffers.empty((4, 8), torch.float32, DEVICE, buffers.poisoning())
    assert torch.isnan(out).all() and buffers.has_canaries()
    out.fill_(1.0)
    buffers.check_canaries("clean")                              # inside the buffer: fine
    assert not buffers.has_canaries()
    out = buffers.empty((4, 8), torch.float32, DEVICE, buffers.poisoning())
    out.view(-1)[:32].fill_(1.0)
    out.view(-1).as_strided((1,), (1,), out.storage_offset() + 32).fill_(2.0)   # one past the end
    with pytest.raises(RuntimeError, match="outside its output buffer"):
        buffers.check_canaries("dirty")
    before = buffers.empty((4, 8), torch.float32, DEVICE, buffers.poisoning())
    before.view(-1).as_strided((1,), (1,), before.storage_offset() - 1).fill_(2.0)   # one before the start
    with pytest.raises(RuntimeError, match="outside its output buffer"):
        buffers.check_canaries("dirty")


# ------------------------------------------------------------------ configs that guard correctness

def _spec(arch, head_dim, dtype, **kw):
    """An NVIDIA call that forward.py and backward.py serve (no Gluon kernel)."""
    return config.CallSpec(arch=arch, dtype=dtype, head_dim=head_dim, batch=2, seqlen_q=1024, seqlen_k=1024,
                           heads_q=8, heads_kv=2, window_right=0, **kw)


def _tiles(cfg) -> dict:
    return {name: getattr(cfg, name) for name in config.TILES}


@pytest.mark.parametrize("arch", ["cuda:sm90", "cuda:sm80"])
@pytest.mark.parametrize("tma_ok", [False, True])
def test_fp32_forward_never_takes_three_stages_on_nvidia(arch, tma_ok):
    # forward.py in fp32 with 3 stages faulted (misaligned address) under Triton 3.6 up to d64 (d40,
    # causal, GQA 4): neither the default nor an autotune candidate takes more than 2, at any head dim
    for d in range(1, 65):
        spec = _spec(arch, d, torch.float32, tma_ok=tma_ok)
        cfg = config.forward_config(spec)
        assert not cfg.gluon and config.default_tiles("fwd", spec, False, cfg.tma)["num_stages"] <= 2
        tiles = [_tiles(cfg)] + config.candidates("fwd", spec, cfg)
        assert all(c["num_stages"] <= config.FWD_FP32_STAGES_MAX <= 2 for c in tiles), d
        assert len(tiles) > 3                                      # still something to search


@pytest.mark.parametrize("arch", ["cuda:sm90", "cuda:sm80"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_dq_never_uses_the_configuration_that_breaks_on_hopper(arch, dtype):
    # bwd_dq with 128-row tiles and 3+ stages faulted (varlen and dense) and silently returned a
    # wrong dq (dense) under Triton 3.6, and 128x64 tiles faulted on varlen: neither the default
    # nor an autotune candidate may be one of them, at any head dim
    for d in range(1, 257):
        for varlen in (False, True):
            spec = _spec(arch, d, dtype, varlen=varlen, deterministic=True)
            dq = config.backward_config(spec).dq
            assert not dq.gluon
            tiles = [config.default_tiles("bwd_dq", spec, False), _tiles(dq)] + config.candidates("bwd_dq", spec, dq)
            assert all(c["block_m"] < 128 or (c["num_stages"] <= 2 and c["block_n"] <= 32) for c in tiles), d
            assert not any(config.dq_breaks_on_nvidia(c) for c in tiles)
            assert len(tiles) > 3                                  # still something to search


@pytest.mark.parametrize("override", [{"fwd": {"gluon": False, "tma": True, "num_stages": 2}},
                                      {"fwd": {"gluon": False, "tma": True, "num_stages": 1}}])
def test_tma_with_fewer_than_the_minimum_stages_is_refused_before_any_launch(monkeypatch, override):
    # Triton 3.6's ptxas crashes on the TMA forward with 2 stages: a ValueError naming the fix
    # instead (config.TMA_MIN_STAGES), raised before anything launches (the sm90 path faked)
    log = fake_sm90.install(monkeypatch)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(override))
    q, k, v = fake_sm90.inputs(d=128)
    p = AttnParams(scale=0.1)
    with pytest.raises(ValueError, match=f"tma with num_stages {override['fwd']['num_stages']}"):
        tb.forward(q, k, v, p)
    assert fake_sm90.kernel_names(log) == []
    enough = {"fwd": dict(override["fwd"], num_stages=config.TMA_MIN_STAGES)}
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(enough))
    tb.forward(q, k, v, p)
    (_, _, c), = fake_sm90.launched(log, "fwd_kernel")
    assert c["TMA"] and c["num_stages"] == config.TMA_MIN_STAGES
    # and autotune never times a TMA forward with fewer
    spec = _spec("cuda:sm90", 128, torch.bfloat16, tma_ok=True)
    cfg = config.forward_config(spec)
    assert cfg.tma and all(c["num_stages"] >= config.TMA_MIN_STAGES for c in config.candidates("fwd", spec, cfg))


# ------------------------------------------------------------------ FA_CK_TRITON_CONFIG

@pytest.mark.parametrize("text,match", [
    ("{", "not JSON"),
    ('{"fwd": 3}', "map kernel names"),
    ('{"bwd": {}}', "unknown kernel 'bwd'"),
    ('{"fwd": {"one_pass": true}}', r"unknown keys \['one_pass'\]"),
    ('{"bwd_dkdv": {"tma": true}}', r"unknown keys \['tma'\]"),           # (dK/dV has no TMA loads)
    ('{"bwd_dq": {"tma_store": true}}', r"unknown keys \['tma_store'\]"),   # (derived, not a knob)
    ('{"fwd": {"raw_max": false}}', r"unknown keys \['raw_max'\]"),
    ('{"fwd": {"block_n": "64"}}', "block_n must be an integer"),
    ('{"fwd": {"block_n": true}}', "block_n must be an integer"),
    ('{"bwd_dq": {"gluon": 0}}', "gluon must be true or false"),
])
def test_config_override_is_validated(monkeypatch, text, match):
    with pytest.raises(ValueError, match=match):
        config.overrides(text)
    # ... and a call reading it is refused the same way (the interpreter's own path)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", text)
    q = torch.randn(1, 16, 2, 16, device=DEVICE)
    with pytest.raises(ValueError, match=match):
        fa_ck.flash_attn_func(q, q, q, backend="triton")


def test_config_override_accepts_known_names_in_any_case():
    assert config.overrides('{"bwd_dq": {"BLOCK_N": 64}}') == {"bwd_dq": {"block_n": 64}}
    assert config.overrides("") == {} and config.overrides("{}") == {}


@pytest.mark.parametrize("kernel", sorted(config.KERNELS))
def test_every_knob_of_every_kernel_can_be_overridden(kernel):
    """Each knob of a kernel's config can be set through FA_CK_TRITON_CONFIG (as bench/kernels.py
    --variant does to measure it): tiles to an integer, switches either way."""
    names = config.knobs(config.KERNELS[kernel])
    assert names and set(config.TILES) <= set(names)
    for name in names:
        for value in ((64, 128) if name in config.TILES else (True, False)):
            assert config.overrides(json.dumps({kernel: {name: value}})) == {kernel: {name: value}}
            assert config.overrides(json.dumps({kernel: {name.upper(): value}})) == {kernel: {name: value}}


# ------------------------------------------------------------------ forward.py's TMA loads
# TMA loads in forward.py (on by default on sm90+ where Gluon does not serve); FA_CK_TRITON_CONFIG
# turns them on or off. The interpreter runs them too (where tma_ok: the tensors are addressable).

TMA_ON = {"fwd": {"gluon": False, "tma": True}}
TRITON_ONLY = {"fwd": {"gluon": False, "tma": False}, "bwd_dkdv": {"gluon": False}, "bwd_dq": {"gluon": False}}
# (fp32 on the CPU: exact; bf16 on a GPU, where fp32 up to d64 cannot take TMA's stages)
TMA_DTYPE = torch.bfloat16 if GPU else torch.float32
PATHS = [pytest.param({}, id="defaults"),
         pytest.param(TMA_ON, id="fwd-tma"),
         pytest.param(TRITON_ONLY, id="triton-only", marks=pytest.mark.skipif(not GPU, reason="the defaults here"))]


def _tma_launches(monkeypatch) -> list:
    return record_launches(monkeypatch, fast_path, forward_kernels.fwd_kernel)


def _skip_tma_with_fp32_stages(override, dtype, d):
    # fp32 up to d64 takes at most 2 stages and TMA at least 3: refused on NVIDIA (see above)
    if GPU and override.get("fwd", {}).get("tma") and dtype == torch.float32 and d <= 64:
        pytest.skip("TMA and fp32 up to d64: no stage count serves both on NVIDIA")


@pytest.mark.parametrize("override", PATHS)
@pytest.mark.parametrize("dtype,sq,sk,d,group,causal", [(torch.float32, 100, 130, 40, 2, True),
                                                         (torch.float32, 64, 33, 64, 1, False),
                                                         (torch.bfloat16, 100, 70, 32, 4, True),
                                                         (torch.float16, 33, 64, 80, 1, True)])
def test_algorithm_paths(monkeypatch, override, dtype, sq, sk, d, group, causal):
    _skip_tma_with_fp32_stages(override, dtype, d)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(override))
    launches = _tma_launches(monkeypatch)
    check(2, sq, sk, 2 * group, 2, d, dtype=dtype, causal=causal, device=DEVICE)
    if override == TMA_ON:                   # (the switch reached the kernel, not only its config)
        assert launches and all(c["TMA"] for _, c in launches)


@pytest.mark.parametrize("override", [pytest.param(TMA_ON, id="fwd-tma"), pytest.param({}, id="defaults")])
def test_tma_with_features(monkeypatch, override):
    # windows, ALiBi and softcap mask and reshape scores: the TMA tiles (zero-filled past the
    # sequence) must see the same values as the plain loads
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(override))
    launches = _tma_launches(monkeypatch)
    slopes = torch.rand(4, device=DEVICE) * 0.3
    check(2, 70, 90, 4, 4, 32, dtype=TMA_DTYPE, causal=True, window_size=(20, 5), alibi_slopes=slopes, softcap=10.0,
          device=DEVICE)
    assert launches and all(c["TMA"] == (override == TMA_ON) for _, c in launches)


def test_tma_varlen(monkeypatch):
    # descriptors are built per sequence: each sequence's own length bounds its tiles
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(TMA_ON))
    launches = _tma_launches(monkeypatch)
    check_varlen([33, 0, 70, 5], [40, 17, 70, 1], 2, 2, 64, dtype=TMA_DTYPE, causal=True, device=DEVICE)
    assert launches and all(c["TMA"] and c["VARLEN"] for _, c in launches)


@pytest.mark.parametrize("d,tma", [(40, True), (111, False)])
def test_tma_falls_back_for_unaligned_rows(monkeypatch, d, tma):
    # rows of d=111 (444 bytes in fp32, 222 in bf16) are no multiple of 16 bytes: plain loads, same answer
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(TMA_ON))
    launches = _tma_launches(monkeypatch)
    check(1, 37, 45, 2, 1, d, dtype=TMA_DTYPE, causal=True, device=DEVICE)
    assert launches and all(c["TMA"] is tma for _, c in launches)


def test_tma_only_where_descriptors_can_address_the_tensors():
    x = torch.randn(2, 48, 4, 64, dtype=torch.bfloat16)
    tma_ok = buffers.tma_ok
    assert tma_ok(x, x) and tma_ok(x.transpose(1, 2).contiguous().transpose(1, 2))   # BSHD or BHSD storage
    odd = torch.randn(2, 48, 4, 111, dtype=torch.bfloat16)       # rows of 222 bytes
    assert not tma_ok(odd)
    assert not tma_ok(torch.randn(1, 16, 2, 256, dtype=torch.bfloat16))   # d256: ptxas crashed (Triton 3.6)
    assert tma_ok(torch.randn(1, 16, 2, 256, dtype=torch.bfloat16), max_head_dim=256)
    shifted = torch.randn(2 * 48 * 4 * 64 + 1, dtype=torch.bfloat16)[1:].view(2, 48, 4, 64)   # 2-byte offset
    assert not tma_ok(x, shifted)
    keys_inner = x.permute(0, 3, 2, 1).contiguous().permute(0, 3, 2, 1)    # stored (B, D, H, S), as fp8's v
    assert not tma_ok(x, keys_inner)
    assert tma_ok(x, keys_inner, keys_contiguous=keys_inner)


# ------------------------------------------------------------------ the backward's temporaries

def _launches_of(monkeypatch, name: str, clone: bool = True) -> list:
    """Every launch of the kernel called `name` (the slow path's and a replay's: both go through
    keyed.launch) as {parameter: argument}; clone: its tensors copied once it ran."""
    seen = []
    real = keyed.launch

    def launch(kernel, grid, args, constexprs, compiled=None):
        result = real(kernel, grid, args, constexprs, compiled)
        if kernel.fn.__name__ == name:
            seen.append({n: a.clone() if clone and torch.is_tensor(a) else a for n, a in zip(kernel.arg_names, args)})
        return result
    monkeypatch.setattr(keyed, "launch", launch)
    return seen


def test_backward_temporaries_start_16_byte_aligned_whatever_their_length(monkeypatch):
    """delta and lse / scale share one allocation, each from a 16-byte boundary (the plan key takes
    them as aligned): here batch x heads x seqlen = 45 floats, not a multiple of 4; the slow path,
    then its replay, both right."""
    slow = []
    real = backward_host.call_spec
    monkeypatch.setattr(backward_host, "call_spec", lambda *a, **kw: slow.append(1) or real(*a, **kw))
    seen = _launches_of(monkeypatch, "bwd_preprocess", clone=False)
    for _ in range(2):
        check(1, 15, 15, 3, 3, 32, causal=True, device=DEVICE)
    assert len(slow) == 1 and len(seen) == 2                 # the second backward replayed
    for named in seen:
        delta, lse_s = named["DELTA"], named["LSE_S"]
        assert delta.numel() == lse_s.numel() == 45
        assert delta.untyped_storage().data_ptr() == lse_s.untyped_storage().data_ptr()
        assert delta.data_ptr() % 16 == 0 and lse_s.data_ptr() % 16 == 0


def _one_pass_backward(monkeypatch, varlen: bool):
    """The fake sm90's backward (Gluon dK/dV kernel, one pass) of one call, twice -> the launch log."""
    log = fake_sm90.install(monkeypatch)
    b, s, hq, hkv, d = 2, 45, 4, 4, 64
    p = AttnParams(scale=0.125, causal=True, window_right=0)
    if varlen:
        lens = [33, 0, 21]
        cu = torch.tensor([0, 33, 33, 54], dtype=torch.int32)
        p = dataclasses.replace(p, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=max(lens), max_seqlen_k=max(lens))
        q, k, v = (torch.randn(54, h, d, dtype=torch.bfloat16) for h in (hq, hkv, hkv))
        out, lse = torch.randn_like(q), torch.randn(hq, 54)
    else:
        q, k, v = fake_sm90.inputs(b=b, sq=s, sk=s, hq=hq, hkv=hkv, d=d)
        out, lse = torch.randn_like(q), torch.randn(b, hq, s)
    for _ in range(2):
        tb.backward(torch.randn_like(out), q, k, v, out, lse, p)
    return log, q


@pytest.mark.skipif(not device.INTERPRET, reason="runs the logged launches in the interpreter")
@pytest.mark.parametrize("varlen", [False, True], ids=["batched", "varlen"])
def test_one_pass_buffer_is_zeroed_by_bwd_preprocess(monkeypatch, varlen):
    """The one pass's fp32 dQ buffer (the Gluon dK/dV kernel adds dQ into it) and the 4 elements
    past its end (the dynamic schedule's unit counter) start as zeros: bwd_preprocess zeroes them
    (ZERO_DQ) in every call but varlen's, whose buffer is made zeros (bwd_preprocess does not
    cover rows outside every sequence). Twice: the slow path, then a batched call's replay, whose
    buffer is carved from the backward's temporaries, 16-byte aligned. Each logged launch of
    bwd_preprocess is run in the interpreter on a buffer poisoned with NaN."""
    log, q = _one_pass_backward(monkeypatch, varlen)
    preps = fake_sm90.launched(log, "bwd_preprocess")
    dkdv = [e for e in log if e != "set_allocator" and e[0].fn.__name__ == "bwd_dkdv_gluon_kernel"]
    assert len(preps) == len(dkdv) == 2 and all(c["ONE_PASS"] for *_, c in dkdv)
    assert len(log.slow) == (2 if varlen else 1)               # (varlen calls are never replayed)
    kernel = backward_kernels.bwd_preprocess
    for call, ((grid, args, c), (dkdv_kernel, _, dargs, _)) in enumerate(zip(preps, dkdv)):
        acc = dict(zip(dkdv_kernel.arg_names, dargs))["DQ_BUF"]
        counter = torch.as_strided(acc, (4,), (1,), acc.storage_offset() + acc.numel())
        assert acc.shape == q.shape and acc.dtype == torch.float32 and acc.data_ptr() % 16 == 0
        assert c["ZERO_DQ"] is not varlen
        if varlen:                            # made zeros, counter included
            assert not acc.any() and not counter.any()
            continue
        named = dict(zip(kernel.arg_names, args))
        assert named["DQ_ACC"] is acc and named["n_acc"] == acc.numel()
        shared = named["DELTA"].untyped_storage().data_ptr() == acc.untyped_storage().data_ptr()
        assert shared is (call == 1)          # the replay's: a part of the temporaries
        acc.fill_(float("nan"))
        counter.fill_(float("nan"))
        kernel[grid](*args, **c)
        assert not acc.any() and not counter.any()


@pytest.mark.gpu
@pytest.mark.skipif(not GPU or torch.cuda.get_device_capability() != (9, 0), reason="needs an sm90 GPU")
@pytest.mark.parametrize("varlen", [False, True], ids=["batched", "varlen"])
def test_one_pass_on_a_nan_buffer_computes_the_reference(monkeypatch, varlen):
    """On the GPU: the one pass's dQ buffer handed over full of NaN (its counter too) wherever
    bwd_preprocess is to zero it; the slow path and then its replay (whose buffer is a part of the
    poisoned temporaries) still give the reference's gradients."""
    real = backward_host.dq_accumulator

    def nan_buffer(q, zeros=True):
        acc = real(q, zeros)
        if not zeros:
            torch.as_strided(acc.view(-1), (acc.numel() + 4,), (1,)).fill_(float("nan"))
        return acc
    monkeypatch.setattr(backward_host, "dq_accumulator", nan_buffer)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": {"one_pass": True}}))
    for _ in range(2):
        if varlen:
            check_varlen([33, 0, 21], [40, 17, 9], 2, 2, 64, dtype=torch.bfloat16, causal=True, device=DEVICE)
        else:
            check(2, 45, 37, 4, 2, 64, dtype=torch.bfloat16, causal=True, device=DEVICE)


def test_bwd_preprocess_writes_delta_and_lse_over_scale(monkeypatch):
    """bwd_preprocess: delta = rowsum(out * dO) and lse / scale, +inf for a query that saw no key
    (here the first rows: causal with more queries than keys), for the Gluon dK/dV kernel."""
    seen = _launches_of(monkeypatch, "bwd_preprocess")
    q = torch.randn(2, 40, 2, 32, device=DEVICE, requires_grad=True)
    k, v = (torch.randn(2, 30, 2, 32, device=DEVICE, requires_grad=True) for _ in range(2))
    out, lse, _ = fa_ck.flash_attn_func(q, k, v, causal=True, softmax_scale=0.3, return_attn_probs=True,
                                        backend="triton")
    out.backward(torch.randn_like(out))
    named, = seen
    o, dout, delta, lse_in, lse_s = (named[n] for n in ("O", "DO", "DELTA", "LSE", "LSE_S"))
    assert torch.isinf(lse[:, :, :10]).all() and torch.isfinite(lse[:, :, 10:]).all()
    assert torch.equal(lse_in, lse.detach())
    want = torch.where(lse_in == float("-inf"), float("inf"), lse_in / 0.3)
    assert torch.equal(torch.isinf(lse_s), torch.isinf(want)) and (lse_s[:, :, :10] > 0).all()
    torch.testing.assert_close(lse_s[:, :, 10:], want[:, :, 10:], rtol=1e-6, atol=0)
    torch.testing.assert_close(delta, (o.float() * dout.float()).sum(-1).transpose(1, 2), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ the raw row max

RAW_MAX_CASES = {"default": {}, "window": dict(window_size=(9, 3)), "softcap": dict(softcap=5.0),
                 "alibi": dict(alibi_slopes=[0.5, 0.25, 0.125, 0.0625]), "negative-scale": dict(softmax_scale=-0.2),
                 "zero-scale": dict(softmax_scale=0.0), "tiny-scale": dict(softmax_scale=1e-300)}


@pytest.mark.parametrize("case", sorted(RAW_MAX_CASES))
def test_raw_row_max_where_it_is_exact(monkeypatch, case):
    """forward.py takes the row max of the raw scores (RAW_MAX) only where the score is the raw
    one times a positive scale: not with softcap or ALiBi, nor for a negative scale or one that
    is 0 in float32 (-inf times it would be NaN); every case against the float64 reference."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"gluon": False}}))
    launches = record_launches(monkeypatch, fast_path, forward_kernels.fwd_kernel)
    feat = dict(RAW_MAX_CASES[case])
    if "alibi_slopes" in feat:
        feat["alibi_slopes"] = torch.tensor(feat["alibi_slopes"], device=DEVICE)
    check(2, 37, 70, 4, 2, 32, causal=True, device=DEVICE, **feat)
    assert launches and all(c["RAW_MAX"] == (case in ("default", "window")) for _, c in launches)


@pytest.mark.parametrize("scale,softcap,alibi,exact", [
    (0.125, False, False, True), (1e-37, False, False, True), (1e-39, False, False, False),
    (-0.125, False, False, False), (0.0, False, False, False), (0.125, True, False, False), (0.125, False, True, False)])
def test_raw_row_max_for_fp8(scale, softcap, alibi, exact):
    """fp8 kernels fold the descales into the scale: the Gluon kernel takes the raw max wherever the
    16-bit one would (the descales are no part of the spec: it keeps their product positive by
    negating q); forward.py's fp8 kernel never takes it."""
    log2_normal = scale / 0.6931471805599453 >= 2.0 ** -126
    spec = config.CallSpec(arch="cuda:sm90", dtype=torch.bfloat16, head_dim=128, batch=2, seqlen_q=1024,
                           seqlen_k=1024, heads_q=8, heads_kv=8, softcap=softcap, alibi=alibi, fp8=True,
                           scale_positive=scale > 0, scale_log2_normal=log2_normal, tma_ok=True, q_tma_ok=True,
                           gluon_ok=not (softcap or alibi), host_desc_ok=True)
    assert spec.raw_max is exact
    fwd = config.forward_config(spec)
    assert fwd.raw_max is (exact and fwd.gluon)
    plain = config.forward_config(dataclasses.replace(spec, gluon_ok=False))
    assert not plain.gluon and not plain.raw_max
    assert config.forward_config(dataclasses.replace(spec, fp8=False, gluon_ok=False)).raw_max is exact


# ------------------------------------------------------------------ sm90 compiles (no GPU)

def _sm90_offline_compile(*args, timeout, **env_extra):
    """tools/sm90_offline_compile.py with these arguments, in a process of its own (the tool swaps
    Triton's driver), the installed Triton, no interpreter."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "FA_CK_TRITON_CONFIG")}
    env["PYTHONPATH"] = os.pathsep.join([str(root / "python"), env.get("PYTHONPATH", "")])
    env.update(env_extra)
    return subprocess.run([sys.executable, str(root / "tools" / "sm90_offline_compile.py"), *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


def _gluon_missing() -> str:
    return importlib.import_module("fa_ck.backends.triton.gluon_launch").GLUON_ERROR   # (a Triton without Gluon)


def test_sm90_d256_compiles_the_gluon_kernels_both_ways():
    # past d128 the Gluon forward and the Gluon backward in two passes (dK / dV, then dQ), asked for;
    # GQA too (a unit steps through its q heads); varlen GQA's dK / dV from backward.py
    gluon = json.dumps({"fwd": {"gluon": True}, "bwd_dkdv": {"gluon": True}, "bwd_dq": {"gluon": True}})
    res = _sm90_offline_compile("--d", "256", "--causal", timeout=600, FA_CK_TRITON_CONFIG=gluon)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    for kernel in ("fwd_gluon_kernel", "bwd_dkdv_gluon_kernel", "bwd_dq_gluon_kernel"):
        assert f"OK       {kernel} " in res.stdout or _gluon_missing()
    res = _sm90_offline_compile("--d", "192", "--hq", "4", "--hkv", "2", timeout=600, FA_CK_TRITON_CONFIG=gluon)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert ("OK       bwd_dkdv_gluon_kernel" in res.stdout and "GROUP=2" in res.stdout) or _gluon_missing()
    assert "OK       bwd_dq_gluon_kernel" in res.stdout or _gluon_missing()
    res = _sm90_offline_compile("--d", "192", "--hq", "4", "--hkv", "2", "--lens", "[[5, 300], [7, 200]]", timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "OK       bwd_dkdv_kernel" in res.stdout and "bwd_dkdv_gluon_kernel" not in res.stdout


def test_sm90_compiles_the_edge_shapes():
    # ptxas crashed on bwd_dq for sm90 when seqlen_k == 1 was specialised into the kernel (d16,
    # causal, GQA); every kernel of tools/sm90_offline_compile.py's SCAN (lengths of 1, empty and
    # one-token varlen sequences, d16-256, features; the Gluon forward and dQ up to d256, the Gluon
    # dK/dV on the plain GQA shapes) is compiled here on the CPU
    res = _sm90_offline_compile("--scan", timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "24 shapes, 0 with a kernel that did not compile" in res.stdout
    lines = res.stdout.splitlines()
    dq, gluon_dq = res.stdout.count("OK       bwd_dq_kernel"), res.stdout.count("OK       bwd_dq_gluon_kernel")
    # every shape has its dQ from a dQ kernel or from the Gluon dK/dV kernel's one pass
    gluon_dkdv = [ln for ln in lines if ln.strip().startswith("OK       bwd_dkdv_gluon_kernel")]
    one_pass = sum("ONE_PASS=True" in ln for ln in gluon_dkdv)
    assert dq + gluon_dq + one_pass >= 24
    assert (res.stdout.count("OK       fwd_gluon_kernel") >= 2 and gluon_dq >= 2) or _gluon_missing()
    assert any("GROUP=4" in ln for ln in gluon_dkdv) or _gluon_missing()      # the first shape: 8 q heads, 2 kv
