"""The Triton FA2 kernels against the float64 reference: forward, lse and all three gradients.

On the CPU they run in the interpreter over many small shapes; with a GPU the same file also
runs larger shapes (marked gpu)."""
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
    check(2, sq, sk, 2 * group, 2, d, causal=causal, device=DEVICE)


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
    from fa_ck.backends.triton import _check_canaries, _empty
    out = _empty((4, 8), torch.float32, DEVICE)
    out.fill_(1.0)
    _check_canaries("clean")                                     # inside the buffer: fine
    out = _empty((4, 8), torch.float32, DEVICE)
    out.view(-1)[:32].fill_(1.0)
    out.view(-1).as_strided((1,), (1,), out.storage_offset() + 32).fill_(2.0)   # one past the end
    with pytest.raises(RuntimeError, match="outside its output buffer"):
        _check_canaries("dirty")


@pytest.mark.parametrize("d", [32, 64, 96, 128])
def test_dq_never_uses_the_configuration_that_faults_on_hopper(d):
    # bwd_dq with 128-row tiles and 3+ stages faulted on the H200 (Triton 3.6): neither the
    # default nor an autotune candidate may be it
    for dtype in (torch.float16, torch.bfloat16):
        cfgs = [configs.default("bwd_dq", "cuda:sm90", d, dtype)] + configs.candidates("bwd_dq", "cuda:sm90", d, dtype)
        assert all(c["BLOCK_M"] < 128 or c["num_stages"] <= 2 for c in cfgs)
        assert len(cfgs) > 3                                   # still something to search


# ------------------------------------------------------------------ algorithm switches
# The forward's lazy rescaling and the backward's one pass (atomic dq) are on by default;
# FA_CK_TRITON_CONFIG turns them off, deterministic=True turns the one pass off.

BOTH_PATHS = [pytest.param({}, id="defaults"),
              pytest.param({"fwd": {"LAZY_RESCALE": False}, "bwd_dkdv": {"ONE_PASS": False}}, id="eager-two-pass")]


@pytest.mark.parametrize("override", BOTH_PATHS)
@pytest.mark.parametrize("dtype,sq,sk,d,group,causal", [(torch.float32, 100, 130, 40, 2, True),
                                                         (torch.float32, 64, 33, 64, 1, False),
                                                         (torch.bfloat16, 130, 100, 32, 4, True),
                                                         (torch.float16, 33, 64, 80, 1, True)])
def test_both_algorithm_paths(monkeypatch, override, dtype, sq, sk, d, group, causal):
    import json
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps(override))
    check(2, sq, sk, 2 * group, 2, d, dtype=dtype, causal=causal, device=DEVICE)


@pytest.mark.parametrize("deterministic", [False, True])
def test_one_pass_and_deterministic_with_features(deterministic):
    # windows, ALiBi and softcap mask and reshape dS; the atomic dq must see the same dS
    slopes = torch.rand(4, device=DEVICE) * 0.3
    check(2, 70, 90, 4, 2, 32, causal=True, window_size=(20, 5), alibi_slopes=slopes, softcap=10.0,
          deterministic=deterministic, device=DEVICE)


@pytest.mark.parametrize("lazy", [True, False])
@pytest.mark.parametrize("growth", ["rising", "falling"])
def test_lazy_rescale_when_the_row_max_moves(monkeypatch, lazy, growth):
    """Keys whose scores rise (or fall) by far more than 2^8 across key blocks: the running max
    must move in late blocks (rising) or never after the first (falling); both stay exact."""
    import json
    from attn_check import assert_close, rand
    import fa_ck
    from fa_ck import reference
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"LAZY_RESCALE": lazy}}))
    sk = 100
    q = rand(1, 40, 2, 32, dtype=torch.float32, device=DEVICE)
    k = rand(1, sk, 2, 32, dtype=torch.float32, device=DEVICE, requires_grad=False)
    v = rand(1, sk, 2, 32, dtype=torch.float32, device=DEVICE)
    ramp = torch.linspace(0.2, 6.0, sk, device=DEVICE)
    if growth == "falling":
        ramp = ramp.flip(0)
    with torch.no_grad():
        k.mul_(ramp[None, :, None, None])
    q.data.abs_()
    k.data.abs_()                             # positive scores: they rise (fall) along the keys
    out, lse, _ = fa_ck.flash_attn_func(q, k, v, return_attn_probs=True, backend="triton")
    ref, ref_lse = reference.attention(q.double(), k.double(), v.double(), dtype=torch.float64)
    assert_close("out", out, ref, 1e-5)
    assert_close("lse", lse, ref_lse, 1e-5)


def test_config_override_is_validated(monkeypatch):
    for text, match in [("{", "not JSON"), ('{"fwd": 3}', "map kernel names"), ('{"bwd": {}}', "unknown kernel"),
                        ('{"fwd": {"ONE_PASS": true}}', "unknown keys")]:
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", text)
        with pytest.raises(ValueError, match=match):
            configs.overrides("fwd")
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dq": {"num_stages": 3}}')
    assert configs.overrides("bwd_dq") == {"num_stages": 3} and configs.overrides("fwd") == {}
