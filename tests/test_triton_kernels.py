"""The Triton FA2 kernels against the float64 reference: forward, lse and all three gradients.

On the CPU they run in the interpreter over many small shapes; with a GPU the same file also
runs larger shapes (marked gpu)."""
import importlib
import json
import os

import pytest
import torch

from attn_check import check
from fa_ck.backends.triton import configs
from conftest import DEVICE, GPU

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


def test_poison_mode_catches_writes_past_an_output():
    """The NaN canaries around outputs (FA_CK_POISON=1, set by conftest) are checked: a write one
    element past the end is reported."""
    from fa_ck.backends.triton import _check_canaries, _empty, _poisoning
    assert _poisoning()
    out = _empty((4, 8), torch.float32, DEVICE, _poisoning())
    out.fill_(1.0)
    _check_canaries("clean")                                     # inside the buffer: fine
    out = _empty((4, 8), torch.float32, DEVICE, _poisoning())
    out.view(-1)[:32].fill_(1.0)
    out.view(-1).as_strided((1,), (1,), out.storage_offset() + 32).fill_(2.0)   # one past the end
    with pytest.raises(RuntimeError, match="outside its output buffer"):
        _check_canaries("dirty")


@pytest.mark.parametrize("d", [16, 40, 64])
def test_fp32_forward_never_takes_three_stages_on_nvidia(d):
    # forward.py in fp32 with 3 stages faulted (misaligned address) on the H200 under Triton 3.6
    # (d40, causal, GQA 4): the default and every autotune candidate take at most 2, 16-bit calls
    # keep their 3
    for arch in ("cuda:sm90", "cuda:sm80"):
        cfgs = [configs.default("fwd", arch, d, torch.float32)] + configs.candidates("fwd", arch, d, torch.float32)
        assert all(c["num_stages"] <= 2 for c in cfgs) and len(cfgs) > 3
    assert configs.default("fwd", "cuda:sm90", d, torch.bfloat16)["num_stages"] == 3


@pytest.mark.parametrize("d", [32, 64, 96, 128])
def test_dq_never_uses_the_configuration_that_breaks_on_hopper(d):
    # bwd_dq with 128-row tiles and 3+ stages faulted (varlen and dense) and silently returned a
    # wrong dq (dense) on the H200 under Triton 3.6, and 128x64 tiles faulted on varlen: neither
    # the default nor an autotune candidate may be one of them
    for dtype in (torch.float16, torch.bfloat16):
        cfgs = [configs.default("bwd_dq", "cuda:sm90", d, dtype)] + configs.candidates("bwd_dq", "cuda:sm90", d, dtype)
        assert all(c["BLOCK_M"] < 128 or (c["num_stages"] <= 2 and c["BLOCK_N"] <= 32) for c in cfgs)
        assert len(cfgs) > 3                                   # still something to search


# ------------------------------------------------------------------ algorithm switches
# TMA loads in the forward (on by default on sm90+), the one-pass backward with atomic dq (off
# by default); FA_CK_TRITON_CONFIG turns either on or off, deterministic=True turns the one
# pass off.

TMA_ALL = {"fwd": {"TMA": True}, "bwd_dkdv": {"TMA": True}}      # dq has no TMA path
TMA_ONE_PASS = {"fwd": {"TMA": True}, "bwd_dkdv": {"TMA": True, "ONE_PASS": True}}
PATHS = [pytest.param({}, id="defaults"),
         pytest.param(TMA_ALL, id="tma-two-pass"),
         pytest.param(TMA_ONE_PASS, id="tma-one-pass"),
         pytest.param({k: {"TMA": False} for k in TMA_ALL} | {"bwd_dkdv": {"TMA": False, "ONE_PASS": True}},
                      id="plain-one-pass")]


@pytest.mark.parametrize("override", PATHS)
@pytest.mark.parametrize("dtype,sq,sk,d,group,causal", [(torch.float32, 100, 130, 40, 2, True),
                                                         (torch.float32, 64, 33, 64, 1, False),
                                                         (torch.bfloat16, 100, 70, 32, 4, True),
                                                         (torch.float16, 33, 64, 80, 1, True)])
def test_algorithm_paths(monkeypatch, override, dtype, sq, sk, d, group, causal):
    import json
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(override))
    check(2, sq, sk, 2 * group, 2, d, dtype=dtype, causal=causal, device=DEVICE)


@pytest.mark.parametrize("override,deterministic", [(TMA_ONE_PASS, False), (TMA_ONE_PASS, True), (TMA_ALL, False)],
                         ids=["tma-one-pass", "tma-deterministic", "tma-two-pass"])
def test_tma_and_one_pass_with_features(monkeypatch, override, deterministic):
    # windows, ALiBi and softcap mask and reshape scores and dS: the TMA tiles (zero-filled past
    # the sequence) and the atomic dq must see the same values as the plain paths
    import json
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(override))
    slopes = torch.rand(4, device=DEVICE) * 0.3
    check(2, 70, 90, 4, 4, 32, causal=True, window_size=(20, 5), alibi_slopes=slopes, softcap=10.0,
          deterministic=deterministic, device=DEVICE)   # no GQA: dk/dv takes TMA only then


@pytest.mark.parametrize("override", [TMA_ALL, TMA_ONE_PASS], ids=["tma-two-pass", "tma-one-pass"])
def test_tma_varlen(monkeypatch, override):
    # descriptors are built per sequence: each sequence's own length bounds its tiles
    import json
    from attn_check import check_varlen
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(override))
    check_varlen([33, 0, 70, 5], [40, 17, 70, 1], 2, 2, 64, causal=True, device=DEVICE)


@pytest.mark.parametrize("varlen", [False, True], ids=["batched", "varlen"])
def test_one_pass_buffer_is_zeroed_by_bwd_preprocess(monkeypatch, varlen):
    """ONE_PASS's fp32 dQ buffer comes uninitialised (here: NaN) wherever bwd_preprocess zeroes
    it (ZERO_DQ: every call but varlen, whose buffer is made zeros), and so do the 4 elements past
    its end (the Gluon dK/dV kernel's unit counter); twice: the slow path, then its replay (a
    batched call's, whose buffer is carved from the backward's temporaries, NaN under poison)."""
    from attn_check import check_varlen
    tb = importlib.import_module("fa_ck.backends.triton")
    real, made = tb._dq_accumulator, []
    real_empty, temps = tb._empty, []

    def nan_buffer(q, zeros=True):
        acc = real(q, zeros)
        if not zeros:
            flat = acc.view(-1)
            torch.as_strided(flat, (flat.numel() + 4,), (1,)).fill_(float("nan"))
        made.append((acc, zeros))
        return acc

    def empty(shape, dtype, device, poison):
        buf = real_empty(shape, dtype, device, poison)
        if len(shape) == 1 and dtype == torch.float32:
            assert poison and torch.isnan(buf).all()
            temps.append(buf)
        return buf
    monkeypatch.setattr(tb, "_dq_accumulator", nan_buffer)
    monkeypatch.setattr(tb, "_empty", empty)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": {"ONE_PASS": True}}))
    for _ in range(2):
        if varlen:
            check_varlen([33, 0, 21], [40, 17, 9], 2, 2, 32, causal=True, device=DEVICE)
        else:
            check(2, 45, 37, 4, 2, 32, causal=True, device=DEVICE)
    assert len(made) == (2 if varlen else 1) and all(zeros == varlen for _, zeros in made)
    counters = [torch.as_strided(acc.view(-1), (4,), (1,), acc.numel()) for acc, _ in made]
    if not varlen:                            # the replay's buffer: the last q.numel() + 4 of its temporaries
        assert len(temps) == 2 and temps[1].numel() == temps[0].numel() + 2 * 45 * 4 * 32 + 4
        counters.append(temps[1][-4:])
    for counter in counters:
        assert torch.equal(counter, torch.zeros(4, device=counter.device))


def test_backward_temporaries_start_16_byte_aligned_whatever_their_length(monkeypatch):
    """delta, lse / scale and a one-pass replay's fp32 dQ buffer share one allocation, each part
    from a 16-byte boundary (the plan key takes them as aligned): here batch x heads x seqlen =
    45 floats, not a multiple of 4; the slow path, then its replay, both right."""
    plans = importlib.import_module("fa_ck.backends.triton.plans")
    tb = importlib.import_module("fa_ck.backends.triton")
    seen = []
    real_slow, real_replay = tb._launch_backward, plans._Plan.replay

    def slow(do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, *rest):
        seen.append(("slow", delta, lse_s))
        return real_slow(do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, *rest)

    def replay(self, slots, *a, **kw):
        if len(slots) == 12:                  # a backward's: ..., delta, lse / scale, dQ buffer
            seen.append(("replay", *slots[9:12]))
        return real_replay(self, slots, *a, **kw)
    monkeypatch.setattr(tb, "_launch_backward", slow)
    monkeypatch.setattr(plans._Plan, "replay", replay)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": {"ONE_PASS": True}}))
    for _ in range(2):
        check(1, 15, 15, 3, 3, 32, causal=True, device=DEVICE)
    assert [kind for kind, *_ in seen] == ["slow", "replay"]
    for kind, *parts in seen:
        assert parts[0].numel() == 45 and all(t.data_ptr() % 16 == 0 for t in parts), kind
    assert seen[1][3].shape == (1, 15, 3, 32)


def test_tma_only_where_descriptors_can_address_the_tensors():
    from fa_ck.backends.triton.host import _tma_ok
    x = torch.randn(2, 48, 4, 64, dtype=torch.bfloat16)
    assert _tma_ok(x, x) and _tma_ok(x.transpose(1, 2).contiguous().transpose(1, 2))   # BSHD or BHSD storage
    odd = torch.randn(2, 48, 4, 111, dtype=torch.bfloat16)       # rows of 222 bytes
    assert not _tma_ok(odd)
    assert not _tma_ok(torch.randn(1, 16, 2, 256, dtype=torch.bfloat16))   # d256: ptxas crashed (Triton 3.6)
    shifted = torch.randn(2 * 48 * 4 * 64 + 1, dtype=torch.bfloat16)[1:].view(2, 48, 4, 64)   # 2-byte offset
    assert not _tma_ok(x, shifted)
    keys_inner = x.permute(0, 3, 2, 1).contiguous().permute(0, 3, 2, 1)    # stored (B, D, H, S), as fp8's v
    assert not _tma_ok(x, keys_inner)
    assert _tma_ok(x, keys_inner, keys_contiguous=keys_inner)


@pytest.mark.parametrize("d", [40, 111])
def test_tma_falls_back_for_unaligned_rows(monkeypatch, d):
    # d=111 in fp32: 444-byte rows, not a multiple of 16: plain loads, same answer
    import json
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(TMA_ALL))
    check(1, 37, 45, 2, 1, d, causal=True, device=DEVICE)


def test_config_override_is_validated(monkeypatch):
    for text, match in [("{", "not JSON"), ('{"fwd": 3}', "map kernel names"), ('{"bwd": {}}', "unknown kernel"),
                        ('{"fwd": {"ONE_PASS": true}}', "unknown keys")]:
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", text)
        with pytest.raises(ValueError, match=match):
            configs.overrides("fwd")
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dq": {"TMA": true}}')
    with pytest.raises(ValueError, match="unknown keys"):     # dq has no TMA path
        configs.overrides("bwd_dq")
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dq": {"BLOCK_N": 64}}')
    assert configs.overrides("bwd_dq") == {"BLOCK_N": 64} and configs.overrides("fwd") == {}


@pytest.mark.parametrize("arch", ["cuda:sm90", "cuda:sm80", "hip:gfx942", "interpreter"])
@pytest.mark.parametrize("kernel", sorted(configs.OVERRIDABLE))
@pytest.mark.parametrize("fp8", [False, True])
def test_every_default_switch_can_be_overridden(monkeypatch, arch, kernel, fp8):
    """Each switch configs.switches sets by default can be set through FA_CK_TRITON_CONFIG (as
    bench/kernels.py --variant does to measure it), to the opposite of its default."""
    import json
    for name, value in configs.switches(kernel, arch, 128, fp8).items():
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({kernel: {name: not value}}))
        assert configs.overrides(kernel) == {name: not value}


@pytest.mark.parametrize("override,match", [('{"fwd": {"num_stages": 2}}', "on by default"),
                                            ('{"bwd_dkdv": {"TMA": true, "num_stages": 2}}', "TMA \\(on for")])
def test_tma_with_two_stages_is_refused_before_any_launch(monkeypatch, override, match):
    # Triton 3.6's ptxas crashes on our TMA kernels with 2 stages: a ValueError naming the fix
    # instead (configs.TMA_MIN_STAGES); the sm90 choice is made without a GPU
    from fa_ck.backends import triton as tb
    from fa_ck.params import AttnParams
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", override)
    q = torch.empty(1, 256, 2, 128, dtype=torch.bfloat16)
    p = AttnParams(scale=0.1)
    kernel = "fwd" if "fwd" in override else "bwd_dkdv"
    with pytest.raises(ValueError, match=match):
        tb._config(kernel, q, 128, p, 256, 256, tma_possible=True)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", override.replace('"num_stages": 2', '"num_stages": 3'))
    assert tb._config(kernel, q, 128, p, 256, 256, tma_possible=True)["TMA"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", "")
    assert all(c["num_stages"] >= configs.TMA_MIN_STAGES for c in configs.candidates(kernel, "cuda:sm90", 128, q.dtype, tma=True))


def test_tma_defaults_follow_the_h200_measurements():
    sw = lambda k, d, fp8=False: configs.switches(k, "cuda:sm90", d, fp8)["TMA"]  # noqa: E731
    assert sw("fwd", 128) and sw("fwd", 96)
    assert not any([sw("fwd", 64), sw("bwd_dkdv", 128), sw("fwd", 256), sw("fwd", 128, fp8=True)])
    assert "TMA" not in configs.switches("bwd_dq", "cuda:sm90", 128, False)
    assert not configs.switches("fwd", "hip:gfx942", 128, False)["TMA"] and not configs.switches("fwd", "cuda:sm80", 128, False)["TMA"]
    assert configs.switches("bwd_dkdv", "cuda:sm90", 128, False)["ONE_PASS"] is False
    # the wider tiles come only with TMA (without it they spill)
    assert configs.default("fwd", "cuda:sm90", 128, torch.bfloat16, tma=True)["BLOCK_N"] == 128
    assert configs.default("fwd", "cuda:sm90", 128, torch.bfloat16)["BLOCK_N"] == 64
    assert configs.default("bwd_dkdv", "cuda:sm90", 128, torch.bfloat16)["BLOCK_M"] == 32
    assert configs.default("bwd_dq", "cuda:sm90", 128, torch.bfloat16)["BLOCK_N"] == 32


def _sm90_offline_compile(*args, timeout, **env_extra):
    """tools/sm90_offline_compile.py with these arguments, in a process of its own (the tool swaps
    Triton's driver), the installed Triton, no interpreter."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(root / "python"), env.get("PYTHONPATH", "")])
    env.update(env_extra)
    return subprocess.run([sys.executable, str(root / "tools" / "sm90_offline_compile.py"), *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


def test_sm90_d256_takes_the_gluon_kernels_both_ways():
    # past d128 the Gluon forward (64-key blocks) and the Gluon backward in two passes: dK / dV
    # split by columns (64-key units), dQ with 32-key blocks; GQA too (a unit steps through its q
    # heads), varlen GQA's dK / dV from backward.py
    gluon_missing = importlib.import_module("fa_ck.backends.triton.launch_gluon")._GLUON_ERROR
    res = _sm90_offline_compile("--d", "256", "--causal", timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    for kernel in ("fwd_gluon_kernel BLOCK_N=64 BLOCK_D=256", "bwd_dkdv_gluon_kernel BLOCK_M=64 BLOCK_D=256",
                   "bwd_dq_gluon_kernel BLOCK_N=32 BLOCK_D=256"):
        assert f"OK       {kernel}" in res.stdout or gluon_missing
    assert "ONE_PASS=True" not in res.stdout and "dq_from_acc" not in res.stdout
    res = _sm90_offline_compile("--d", "192", "--hq", "4", "--hkv", "2", timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert ("OK       bwd_dkdv_gluon_kernel" in res.stdout and "GROUP=2" in res.stdout) or gluon_missing
    assert "OK       bwd_dq_gluon_kernel BLOCK_N=32 BLOCK_D=256" in res.stdout or gluon_missing
    res = _sm90_offline_compile("--d", "192", "--hq", "4", "--hkv", "2", "--lens", "[[5, 300], [7, 200]]", timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "OK       bwd_dkdv_kernel" in res.stdout and "bwd_dkdv_gluon_kernel" not in res.stdout


def test_sm90_compiles_the_edge_shapes():
    # ptxas crashed on bwd_dq for sm90 when seqlen_k == 1 was specialised into the kernel (d16,
    # causal, GQA: H200 sweep); every kernel of tools/sm90_offline_compile.py's SCAN (lengths
    # of 1, empty and one-token varlen sequences, d16-256, features; the Gluon forward and dQ up to
    # d256, the Gluon dK/dV on the plain GQA shapes) is compiled here on the CPU
    res = _sm90_offline_compile("--scan", timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "24 shapes, 0 with a kernel that did not compile" in res.stdout
    dq, gluon_dq = res.stdout.count("OK       bwd_dq_kernel"), res.stdout.count("OK       bwd_dq_gluon_kernel")
    # every shape has its dQ from a dQ kernel or from the Gluon dK/dV kernel's one pass
    lines = res.stdout.splitlines()
    gluon_dkdv = [ln for ln in lines if ln.strip().startswith("OK       bwd_dkdv_gluon_kernel")]
    one_pass = sum("ONE_PASS=True" in ln for ln in gluon_dkdv)
    assert dq + gluon_dq + one_pass >= 24
    gluon_missing = importlib.import_module("fa_ck.backends.triton.launch_gluon")._GLUON_ERROR   # a Triton without Gluon
    assert (res.stdout.count("OK       fwd_gluon_kernel") >= 2 and gluon_dq >= 2) or gluon_missing
    assert any("GROUP=4" in ln for ln in gluon_dkdv) or gluon_missing      # the first shape: 8 q heads, 2 kv


RAW_MAX_CASES = {"default": {}, "window": dict(window_size=(9, 3)), "softcap": dict(softcap=5.0),
                 "alibi": dict(alibi_slopes=[0.5, 0.25, 0.125, 0.0625]), "negative-scale": dict(softmax_scale=-0.2),
                 "zero-scale": dict(softmax_scale=0.0), "tiny-scale": dict(softmax_scale=1e-300), "asked-off": {}}


@pytest.mark.parametrize("case", sorted(RAW_MAX_CASES))
def test_raw_row_max_where_it_is_exact(monkeypatch, case):
    """forward.py takes the row max of the raw scores (RAW_MAX, on by default) where the score is
    the raw one times a positive scale: not with softcap or ALiBi, nor for a negative scale or one
    that is 0 in float32 (-inf times it would be NaN), nor when asked not to; every case against
    the float64 reference."""
    from attn_check import record_launches
    tb = importlib.import_module("fa_ck.backends.triton")
    plans = importlib.import_module("fa_ck.backends.triton.plans")
    fwd = {"GLUON": False, **({"RAW_MAX": False} if case == "asked-off" else {})}
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": fwd}))
    launches = record_launches(monkeypatch, plans, tb.fwd_kernel)
    feat = dict(RAW_MAX_CASES[case])
    if "alibi_slopes" in feat:
        feat["alibi_slopes"] = torch.tensor(feat["alibi_slopes"], device=DEVICE)
    check(2, 37, 70, 4, 2, 32, causal=True, device=DEVICE, **feat)
    assert launches and all(c["RAW_MAX"] == (case in ("default", "window")) for _, c in launches)


def test_raw_row_max_for_fp8_with_any_descales():
    """fp8 kernels fold the descales into the scale: a raw max with fa_ck's own (positive) and with
    a caller's (of any sign, or 0: the Gluon kernel keeps the product positive by negating q,
    forward_gluon_loads._copy_q_signed; forward.py's fp8 kernel never takes it, its launcher's choice)."""
    from fa_ck.params import AttnParams
    tb = importlib.import_module("fa_ck.backends.triton")
    host = importlib.import_module("fa_ck.backends.triton.host")

    def raw_max(cfg, p):
        return host._raw_max(cfg, p, tb._scalars(p)["scale_log2"])
    assert raw_max({}, AttnParams(scale=0.125)) and not raw_max({"RAW_MAX": False}, AttnParams(scale=0.125))
    assert raw_max({}, AttnParams(scale=0.125, fp8=True))          # fa_ck quantises: its descales
    assert raw_max({}, AttnParams(scale=0.125, fp8=True, q_descale=-torch.ones(1, 1)))   # a caller's
    assert not raw_max({}, AttnParams(scale=-0.125, fp8=True, q_descale=-torch.ones(1, 1)))   # the scale's sign
    assert not raw_max({}, AttnParams(scale=1e-39)) and raw_max({}, AttnParams(scale=1e-37))


def test_bwd_preprocess_writes_delta_and_lse_over_scale(monkeypatch):
    """bwd_preprocess: delta = rowsum(out * dO) and lse / scale, +inf for a query that saw no key
    (here the first rows: causal with more queries than keys), for the Gluon dK/dV kernel's
    LSE_PREP."""
    import fa_ck
    tb = importlib.import_module("fa_ck.backends.triton")
    plans = importlib.import_module("fa_ck.backends.triton.plans")
    seen = []
    real = plans.launch

    def recording(kernel, grid, args, constexprs):
        result = real(kernel, grid, args, constexprs)
        if kernel is tb.bwd_preprocess:
            seen.append([a.clone() if torch.is_tensor(a) else a for a in args[:5]])
        return result
    monkeypatch.setattr(plans, "launch", recording)
    q = torch.randn(2, 40, 2, 32, device=DEVICE, requires_grad=True)
    k, v = (torch.randn(2, 30, 2, 32, device=DEVICE, requires_grad=True) for _ in range(2))
    out, lse, _ = fa_ck.flash_attn_func(q, k, v, causal=True, softmax_scale=0.3, return_attn_probs=True)
    do = torch.randn_like(out)
    out.backward(do)
    (o, dout, delta, lse_in, lse_s), = seen
    assert torch.isinf(lse[:, :, :10]).all() and torch.isfinite(lse[:, :, 10:]).all()
    assert torch.equal(lse_in, lse.detach())
    want = torch.where(lse_in == float("-inf"), float("inf"), lse_in / 0.3)
    assert torch.equal(torch.isinf(lse_s), torch.isinf(want)) and (lse_s[:, :, :10] > 0).all()
    torch.testing.assert_close(lse_s[:, :, 10:], want[:, :, 10:], rtol=1e-6, atol=0)
    torch.testing.assert_close(delta, (o.float() * dout.float()).sum(-1).transpose(1, 2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("head_dim,causal,seqlen,fp8_inputs,asked,expected", [
    (128, False, 4096, False, None, True), (128, True, 4096, False, None, True), (128, True, 4000, False, None, False),
    (64, True, 4000, False, None, True), (64, False, 4096, False, None, True), (128, True, 4000, False, True, True),
    (128, False, 4096, False, False, False), (128, False, 4096, True, None, True), (128, True, 4000, True, None, False)])
def test_late_sum_is_decided_per_call(monkeypatch, head_dim, causal, seqlen, fp8_inputs, asked, expected):
    """LATE_SUM (the Gluon forward adds P's row sums a block late) is on for fp8 with P in
    registers (fa_ck's own of 16-bit inputs, and a caller's fp8, whose v fa_ck copies into the
    kernel's order) but where decisions.fwd_late_sum_wins says not (masked calls past d64 whose loop
    branches on the mask: S 4000 is no whole number of tiles, so the diagonal's block cannot
    stream first), off for 16-bit calls (not measured there), as asked through FA_CK_TRITON_CONFIG; the sm90 choice is made without a GPU, and remembered per
    sequence length's remainder (the two lengths one after the other)."""
    import json
    from fa_ck.backends import triton as tb
    from fa_ck.params import AttnParams
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"LATE_SUM": asked}}) if asked is not None else "")
    q = torch.empty(1, seqlen, 2, head_dim, dtype=torch.float8_e4m3fn if fp8_inputs else torch.bfloat16)
    p = AttnParams(scale=0.1, causal=causal, window_right=0 if causal else -1, fp8=True)
    other = 4096 if seqlen == 4000 else 4000           # the other length first, into the remembered configs
    tb._config("fwd", q, head_dim, p, other, other, tma_possible=True, gluon_possible=True, fp8_inputs=fp8_inputs)
    cfg = tb._config("fwd", q, head_dim, p, seqlen, seqlen, tma_possible=True, gluon_possible=True,
                     fp8_inputs=fp8_inputs)
    assert cfg["GLUON"] and cfg["LATE_SUM"] is expected
    plain = tb._config("fwd", q.to(torch.bfloat16), head_dim, AttnParams(scale=0.1, causal=causal,
                       window_right=0 if causal else -1), seqlen, seqlen, tma_possible=True, gluon_possible=True)
    assert plain["LATE_SUM"] is (asked if asked is not None else False)
