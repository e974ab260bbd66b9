"""config.py, the one place that decides each kernel's config: a pure, memoised function of a frozen
CallSpec; FA_CK_TRITON_CONFIG checked against the configs' knobs; the launchers launching what it
returns; and every config it can return computing the right answer.

On the CPU the Triton kernels (forward.py, backward.py) run in the interpreter under each
architecture's configs (the device faked); the Gluon kernels' configs run on a GPU (marked gpu)."""
import dataclasses
import importlib
import itertools
import json
import math

import pytest
import torch

import fa_ck
import fake_sm90
from attn_check import assert_close, check, rand
from conftest import DEVICE, GPU
from fa_ck import reference

config = importlib.import_module("fa_ck.backends.triton.config")
device = importlib.import_module("fa_ck.backends.triton.device")
forward_host = importlib.import_module("fa_ck.backends.triton.forward_host")
backward_host = importlib.import_module("fa_ck.backends.triton.backward_host")

BF16 = torch.bfloat16


def _spec(**kw) -> "config.CallSpec":
    base = dict(arch="cuda:sm90", dtype=BF16, head_dim=128, batch=2, seqlen_q=1024, seqlen_k=1024, heads_q=8,
                heads_kv=8, tma_ok=True, q_tma_ok=True, gluon_ok=True, host_desc_ok=True, dkdv_tma_ok=True,
                dq_tma_ok=True)
    return config.CallSpec(**{**base, **kw})


# ---------------------------------------------------------------------------------- the function

def test_the_configs_are_frozen_and_memoised_on_the_spec():
    spec = _spec(window_right=0)
    fwd, bwd = config.forward_config(spec), config.backward_config(spec)
    assert config.forward_config(_spec(window_right=0)) is fwd        # an equal spec: the same answer
    assert config.backward_config(_spec(window_right=0)) is bwd
    assert hash(spec) == hash(_spec(window_right=0))
    for frozen in (spec, fwd, bwd, bwd.dkdv):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(frozen, dataclasses.fields(frozen)[0].name, None)


def test_every_field_of_the_spec_is_part_of_its_identity():
    """Nothing a config depends on can be left out of the memo's key: the key is the whole spec."""
    spec = _spec()
    for f in dataclasses.fields(config.CallSpec):
        value = getattr(spec, f.name)
        other = (not value if type(value) is bool else value + 1 if type(value) is int else
                 value + "x" if type(value) is str else torch.float16)
        assert dataclasses.replace(spec, **{f.name: other}) != spec, f.name


def test_the_config_follows_the_spec_not_the_environment(monkeypatch):
    spec = _spec()
    before = config.forward_config(spec)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"block_n": 64}}')
    assert config.forward_config(spec) is before          # the environment reaches it only through the spec
    assert config.forward_config(_spec(overrides='{"fwd": {"block_n": 64}}')).block_n == 64


# ---------------------------------------------------------------------------------- FA_CK_TRITON_CONFIG

@pytest.mark.parametrize("text,match", [
    ("{", "not JSON"),
    ('["fwd"]', "must map kernel names"),
    ('{"fwd": 3}', "must map kernel names"),
    ('{"bwd": {}}', "unknown kernel 'bwd'"),
    ('{"fwd": {"pingpong": true}}', r"unknown keys \['pingpong'\]"),
    ('{"bwd_dq": {"one_pass": false}}', r"unknown keys \['one_pass'\]"),
    ('{"fwd": {"block_m": "x"}}', "block_m must be an integer"),
    ('{"fwd": {"block_m": 64.0}}', "block_m must be an integer"),
    ('{"bwd_dkdv": {"dynamic": 1}}', "dynamic must be true or false"),
])
def test_overrides_are_checked_against_the_knobs(text, match):
    with pytest.raises(ValueError, match=match):
        config.overrides(text)


@pytest.mark.parametrize("kernel", sorted(config.KERNELS))
def test_the_allowed_overrides_are_the_configs_knobs(kernel):
    kind = config.KERNELS[kernel]
    names = config.knobs(kind)
    assert set(names) <= {f.name for f in dataclasses.fields(kind)}
    assert set(config.TILES) <= set(names) and "gluon" in names
    table = {kernel: {name: (64 if name in config.TILES else True) for name in names}}
    assert config.overrides(json.dumps(table)) == table
    upper = {kernel: {name.upper(): value for name, value in table[kernel].items()}}
    assert config.overrides(json.dumps(upper)) == table           # (names in any case)


@pytest.mark.parametrize("kernel,knob,value,where", [
    ("fwd", "block_n", 64, dict()), ("fwd", "num_stages", 3, dict()), ("fwd", "late_sum", True, dict()),
    ("fwd", "tma_store", False, dict()), ("fwd", "host_desc", False, dict()),
    ("fwd", "gluon", False, dict()), ("fwd", "tma", False, dict(gluon_ok=False)),
    ("fwd", "f16_scores", False, dict(fp8=True, head_dim=64)),
    ("fwd", "q16_early", False, dict(fp8=True, head_dim=64)),
    ("bwd_dkdv", "one_pass", False, dict()), ("bwd_dkdv", "from_zero", True, dict()),
    ("bwd_dkdv", "persistent", True, dict(batch=8)), ("bwd_dkdv", "dynamic", False, dict(head_dim=64)),
    ("bwd_dkdv", "tma_store", False, dict()), ("bwd_dkdv", "block_m", 32, dict(head_dim=64, deterministic=True)),
    ("bwd_dq", "block_n", 32, dict(head_dim=64, seqlen_k=4096)), ("bwd_dq", "num_stages", 2, dict()),
])
def test_an_override_reaches_the_config(kernel, knob, value, where):
    spec = _spec(**where, overrides=json.dumps({kernel: {knob: value}}))
    if kernel == "bwd_dq":
        spec = dataclasses.replace(spec, deterministic=True)      # (no one pass: the dQ kernel runs)
    cfg = {"fwd": lambda: config.forward_config(spec), "bwd_dkdv": lambda: config.backward_config(spec).dkdv,
           "bwd_dq": lambda: config.backward_config(spec).dq}[kernel]()
    assert getattr(cfg, knob) == value


@pytest.mark.parametrize("kernel,asked,where,match", [
    ("fwd", {"block_m": 96}, dict(gluon_ok=False), "block_m must be a power of two"),
    ("fwd", {"block_m": 64}, dict(), "the Gluon kernel has block_m 128"),
    ("fwd", {"block_m": 192}, dict(head_dim=128), "block_m 192 .* head dims up to 64"),
    ("fwd", {"block_m": 192, "late_sum": True}, dict(head_dim=64), "late_sum is in the two-warpgroup"),
    ("fwd", {"num_stages": 4, "block_n": 128}, dict(head_dim=256), "shared memory"),
    ("fwd", {"block_n": 16}, dict(fp8=True, head_dim=64), "32 or more keys"),
    ("fwd", {"f16_wide": True, "f16_scores": False}, dict(fp8=True), "f16_wide is a step of f16_scores"),
    ("fwd", {"gluon": False, "num_stages": 2}, dict(head_dim=128), "tma with num_stages 2"),
    ("fwd", {"tma": True, "num_stages": 3}, dict(gluon_ok=False, dtype=torch.float32, head_dim=40),
     "fault in the fp32 forward"),
    ("bwd_dkdv", {"block_n": 64}, dict(), "the Gluon kernel has block_n 128"),
    ("bwd_dkdv", {"block_m": 32}, dict(), "one pass takes 64 or more queries"),
    ("bwd_dkdv", {"block_m": 32}, dict(head_dim=256), "64 or 128 queries per step"),
    ("bwd_dkdv", {"one_pass": True}, dict(head_dim=256), "past head dim 128"),
    ("bwd_dkdv", {"one_pass": True}, dict(gluon_ok=False), "does not serve this call"),
    ("bwd_dkdv", {"num_stages": 4}, dict(head_dim=128), "shared memory"),
    ("bwd_dq", {"block_m": 64}, dict(deterministic=True), "the Gluon kernel has block_m 128"),
])
def test_a_config_the_kernel_cannot_take_is_refused_naming_the_knob(kernel, asked, where, match):
    spec = _spec(**where, overrides=json.dumps({kernel: asked}))
    with pytest.raises(ValueError, match=match):
        config.forward_config(spec) if kernel == "fwd" else config.backward_config(spec)


# ---------------------------------------------------------------------------------- correctness guards

@pytest.mark.parametrize("head_dim", [16, 32, 40, 64, 96, 128, 160, 256])
@pytest.mark.parametrize("dtype", [torch.float16, BF16, torch.float32])
def test_nvidia_never_takes_tiles_that_fault_under_triton_3_6(head_dim, dtype):
    """dQ's 128-row tiles with 3 stages or 64+ keys, the fp32 forward with 3 stages up to d64, and
    the TMA forward with 2 stages faulted or crashed ptxas on the H200 (Triton 3.6): neither the
    defaults nor autotune's candidates reach them."""
    for sm in ("cuda:sm80", "cuda:sm90"):
        spec = _spec(arch=sm, head_dim=head_dim, dtype=dtype, gluon_ok=False)
        fwd, bwd = config.forward_config(spec), config.backward_config(dataclasses.replace(spec, deterministic=True))
        assert not config.dq_breaks_on_nvidia(dataclasses.asdict(bwd.dq))
        assert all(not config.dq_breaks_on_nvidia(c) for c in config.candidates("bwd_dq", spec, bwd.dq))
        fwd_tiles = [dataclasses.asdict(fwd)] + config.candidates("fwd", spec, fwd)
        if dtype == torch.float32 and head_dim <= 64:
            assert all(c["num_stages"] <= config.FWD_FP32_STAGES_MAX for c in fwd_tiles)
        if fwd.tma:
            assert all(c["num_stages"] >= config.TMA_MIN_STAGES for c in fwd_tiles)


def test_the_gluon_dkdv_kernel_only_with_a_positive_scale():
    """Its multiplies start from -lse / scale, which a zero or negative scale would make NaN or +inf."""
    assert config.backward_config(_spec()).dkdv.gluon
    for scale in (dict(scale_positive=False, scale_log2_normal=False),):
        assert not config.backward_config(_spec(**scale)).dkdv.gluon
    assert not config.forward_config(_spec(scale_log2_normal=False)).raw_max


def test_gqa_dkdv_in_gluon_only_through_host_made_descriptors():
    assert not config.backward_config(_spec(heads_kv=2, host_desc_ok=False)).dkdv.gluon
    assert not config.backward_config(_spec(heads_kv=2, varlen=True)).dkdv.gluon
    assert config.backward_config(_spec(heads_kv=2)).dkdv.gluon


@pytest.mark.parametrize("head_dim", [16, 32, 59, 64])
def test_one_pass_starts_from_zero_only_where_every_key_block_is_whole(head_dim):
    """from_zero leaves keys past seqlen_k unmasked, and one pass adds their dS into dQ: a ragged last
    key block (or varlen) there gave NaN dQ in flash-attn's bwd_varlen_overflow test."""
    for sk, varlen in ((3, True), (1000, False), (1024, True), (1100, False), (1024, False), (4096, False)):
        spec = _spec(head_dim=head_dim, dtype=torch.float16, seqlen_k=sk, varlen=varlen, host_desc_ok=not varlen)
        dkdv = config.backward_config(spec).dkdv
        if dkdv.one_pass and dkdv.from_zero:
            assert not varlen and sk % dkdv.block_n == 0, (sk, varlen, dkdv)
    # an override still reaches the kernel (a debugging aid, docs/tuning.md says what it risks)
    asked = _spec(head_dim=64, seqlen_k=1000, overrides='{"bwd_dkdv": {"one_pass": true, "from_zero": true}}')
    assert config.backward_config(asked).dkdv.from_zero


def test_the_persistent_grids_cover_every_unit():
    """A persistent program takes units p, p + P, ...: with P coprime to the units per head, each
    program's units cycle through every position within a head."""
    for units_per_head, heads, sms in itertools.product((1, 2, 3, 8, 12, 32, 33, 66), (1, 4, 7, 64), (132, 8, 66)):
        units = units_per_head * heads
        p = config.coprime_programs(units, units_per_head, sms)
        assert 1 <= p <= min(units, sms)
        taken = sorted(u for prog in range(p) for u in range(prog, units, p))
        assert taken == list(range(units))                      # every unit once
        if units > sms:                                          # each program cycles through a head's units
            assert math.gcd(p, units_per_head) == 1


# ---------------------------------------------------------------------------------- the launchers

def _recording_configs(monkeypatch) -> list:
    """Wrap the host code's calls of the chooser: each config it is given is appended to the list."""
    used = []
    for module, name in ((forward_host, "forward_config"), (backward_host, "backward_config")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda spec, _real=real: used.append(_real(spec)) or used[-1])
    return used


def test_the_launchers_launch_the_config(monkeypatch):
    """What the fake sm90 path launches is the chooser's config, field by field."""
    log = fake_sm90.install(monkeypatch)
    used = _recording_configs(monkeypatch)
    q, k, v = (t.requires_grad_() for t in fake_sm90.inputs(b=2, sq=300, sk=300, hq=4, hkv=4, d=64))
    out = fa_ck.flash_attn_func(q, k, v, causal=True)
    out.backward(torch.ones_like(out))
    fwd, bwd = used
    (grid, _, c), = fake_sm90.launched(log, "fwd_gluon_kernel")
    assert (grid[0], c["BLOCK_M"], c["BLOCK_N"], c["NUM_BUF"], c["num_warps"]) == \
        (fwd.programs, fwd.block_m, fwd.block_n, fwd.num_stages, fwd.num_warps)
    assert (c["EVEN_N"], c["DIAG_FIRST"], c["HOST_DESC"], c["TMA_STORE"], c["LATE_SUM"], c["RAW_MAX"]) == \
        (fwd.even_n, fwd.diag_first, fwd.host_desc, fwd.tma_store, fwd.late_sum, fwd.raw_max)
    (grid, _, c), = fake_sm90.launched(log, "bwd_dkdv_gluon_kernel")
    d = bwd.dkdv
    assert (grid[0], c["BLOCK_M"], c["NUM_BUF"], c["NUM_KV"], c["ONE_PASS"], c["PERSISTENT"], c["DYNAMIC"]) == \
        (d.programs, d.block_m, d.num_stages, d.num_kv, d.one_pass, d.persistent, d.dynamic)
    assert (c["HOST_DESC"], c["FROM_ZERO"], c["TMA_STORE"]) == (d.host_desc, d.from_zero, d.tma_store)
    (grid, _, c), = fake_sm90.launched(log, "bwd_preprocess")
    assert c["BLOCK_M"] == bwd.preprocess_block_m


# ---------------------------------------------------------------------------------- every config, run

ARCHS = ("interpreter", "hip:gfx942", "cuda:sm80", "cuda:sm90")
HEAD_DIMS = (16, 40, 64, 96, 128, 160, 256)
DTYPES = (torch.float16, BF16, torch.float32)


def _triton_configs() -> dict:
    """{(fwd config, bwd config): (arch, head dim, dtype)}: every config the chooser returns for
    forward.py and backward.py, on each architecture (the interpreter's facts: no Gluon kernel)."""
    found = {}
    for arch, d, dtype in itertools.product(ARCHS, HEAD_DIMS, DTYPES):
        spec = _spec(arch=arch, head_dim=d, dtype=dtype, batch=1, seqlen_q=130, seqlen_k=130, heads_q=2,
                     heads_kv=1, window_right=0, gluon_ok=False)
        key = (config.forward_config(spec), config.backward_config(spec))
        found.setdefault(key, (arch, d, dtype))
    return found


TRITON_CONFIGS = _triton_configs()


@pytest.mark.parametrize("arch,head_dim,dtype", sorted(set(TRITON_CONFIGS.values()), key=str))
def test_every_triton_kernel_config_computes_the_reference(monkeypatch, arch, head_dim, dtype):
    """Each distinct config of forward.py and backward.py, run in the interpreter (or on this GPU)
    under its architecture's choice, against the float64 reference."""
    if GPU:
        pytest.skip("the interpreter's run; on a GPU its own configs run (test_every_gluon_config...)")
    monkeypatch.setattr(device, "arch", lambda dev: arch)
    used = _recording_configs(monkeypatch)
    check(1, 130, 130, 2, 1, head_dim, dtype=dtype, device=DEVICE, causal=True, same_precision=True)
    assert (used[0], used[1]) in TRITON_CONFIGS        # (the run took the config this case stands for)


def _gluon_cases():
    """(name, flash_attn_func arguments, shapes) reaching the Gluon kernels' configs on an sm90 GPU."""
    cases = []
    for d, dtype in itertools.product((64, 128, 256), (torch.float16, BF16)):
        for s, causal in itertools.product((256, 1000, 2048), (False, True)):
            cases.append((f"d{d}-{dtype}-s{s}-{'causal' if causal else 'full'}", dict(causal=causal),
                          (max(1, 4096 // s), s, s, 8, 8, d), dtype))
    cases += [("gqa4-d128", dict(causal=True), (2, 1024, 1024, 16, 4, 128), BF16),
              ("gqa8-d64-masked", dict(causal=True), (2, 1024, 1024, 16, 2, 64), BF16),
              ("window-d128", dict(window_size=(100, 30)), (2, 700, 700, 4, 4, 128), BF16),
              ("deterministic-d128", dict(causal=True, deterministic=True), (2, 1024, 1024, 8, 8, 128), BF16),
              ("three-warpgroups-d64", dict(), (8, 2048, 2048, 16, 16, 64), BF16),
              ("short-causal-d64", dict(causal=True), (8, 512, 512, 8, 8, 64), torch.float16),
              ("d96", dict(causal=True), (2, 777, 777, 4, 4, 96), BF16),
              ("d192", dict(), (2, 600, 600, 4, 4, 192), BF16)]
    return cases


@pytest.mark.gpu
@pytest.mark.parametrize("name,feat,shape,dtype", _gluon_cases(), ids=[c[0] for c in _gluon_cases()])
def test_every_gluon_config_computes_the_reference(monkeypatch, name, feat, shape, dtype):
    """The H100/H200's configs (the Gluon kernels') across head dims, lengths, masks, GQA and the
    schedules the chooser picks by length and head count, against the float64 reference."""
    if device.arch(torch.device("cuda")) != "cuda:sm90":
        pytest.skip("the Gluon kernels are sm90's")
    b, sq, sk, hq, hkv, d = shape
    check(b, sq, sk, hq, hkv, d, dtype=dtype, device="cuda", same_precision=True, **feat)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("s", [1024, 4096])
def test_every_gluon_fp8_config_computes_the_reference(d, causal, s):
    if device.arch(torch.device("cuda")) != "cuda:sm90":
        pytest.skip("the Gluon kernels are sm90's")
    q, k, v = (rand(max(1, 8192 // s), s, 8, d, dtype=BF16, device="cuda", requires_grad=False) for _ in range(3))
    out = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, dtype=torch.float64)
    assert_close("fp8 out", out, ref, 0.08)         # e4m3 with per-(batch, head) scales: ~5 % on N(0, 1)
