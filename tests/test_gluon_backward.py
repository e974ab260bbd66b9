"""The Hopper backward kernels in Gluon (backends/triton/backward_gluon.py: dK/dV, dq_gluon.py: dQ): where
they are the default, their switches and configurations (CPU), and their gradients against the
float64 reference on an sm90 GPU, by default and when asked for. On the CPU it is only compiled for sm90
(tools/triton_compile_check.py's sm90 rows, which CI runs)."""
import importlib
import json
import os

import pytest
import torch

from attn_check import check, check_varlen, count_calls, record_launches
from conftest import GPU
import fa_ck
from fa_ck.params import AttnParams

tb = importlib.import_module("fa_ck.backends.triton")      # (fa_ck.backends is the function)
gluon = importlib.import_module("fa_ck.backends.triton.launch_gluon")
plans = importlib.import_module("fa_ck.backends.triton.plans")
configs = tb.configs
decisions = importlib.import_module("fa_ck.backends.triton.decisions")
def triton_cdiv(a, b):
    return -(-a // b)


SM90 = GPU and torch.cuda.get_device_capability() == (9, 0)
ASK = '{"bwd_dkdv": {"GLUON": true}}'
ASK_DQ = '{"bwd_dq": {"GLUON": true}}'


def _config(monkeypatch, possible=True, kernel="bwd_dkdv", head_dim=128, seqlen=4096, group=1, **kw):
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    q = torch.randn(1, 16, 2, head_dim, dtype=torch.bfloat16)
    return tb._config(kernel, q, head_dim, AttnParams(scale=0.1, **kw), seqlen, seqlen,
                      tma_possible=kernel != "bwd_dq", gluon_possible=possible, group=group)


def test_gluon_backward_on_by_default_where_it_measured_faster(monkeypatch):
    """decisions.gluon_wins (h200-20261130-bwd, -sixth, -seventh, -tenth, h200-20261201-fifteenth):
    dK/dV always; dQ from d128 always (to d256), at d64 from 4k keys. Only sm90, only calls the
    kernels serve."""
    for kernel in ("bwd_dkdv", "bwd_dq"):
        assert configs.switches(kernel, "cuda:sm90", 128, False)["GLUON"]
        assert not configs.switches(kernel, "cuda:sm80", 128, False)["GLUON"]
        assert configs.switches(kernel, "cuda:sm90", 256, False)["GLUON"]       # to d256 (16-bit)
        assert not _config(monkeypatch, kernel=kernel, possible=False, causal=True, window_right=0)["GLUON"]
    for d in (64, 128):
        assert _config(monkeypatch, head_dim=d)["GLUON"] and _config(monkeypatch, head_dim=d, window_left=100)["GLUON"]
        assert _config(monkeypatch, head_dim=d, seqlen=1024)["GLUON"]
        assert _config(monkeypatch, head_dim=d, seqlen=2048, causal=True, window_right=0)["GLUON"]
    for d in (160, 256):
        assert _config(monkeypatch, head_dim=d)["GLUON"] and _config(monkeypatch, head_dim=d, seqlen=512)["GLUON"]
        assert _config(monkeypatch, kernel="bwd_dq", head_dim=d, seqlen=512)["GLUON"]
    assert _config(monkeypatch, kernel="bwd_dq", seqlen=128)["GLUON"]
    assert not _config(monkeypatch, kernel="bwd_dq", head_dim=64, seqlen=1024)["GLUON"]
    assert _config(monkeypatch, kernel="bwd_dq", head_dim=64)["GLUON"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": false}, "bwd_dq": {"GLUON": false}}')
    assert not _config(monkeypatch, causal=True, window_right=0)["GLUON"]
    assert not _config(monkeypatch, kernel="bwd_dq")["GLUON"]


def test_dkdv_from_zero_on_full_calls_up_to_d64(monkeypatch):
    """decisions.dkdv_from_zero_wins (h200-20261130-tenth call 3): S^T and dP^T start from zero on
    full calls up to head dim 64 (with start values ptxas waited for S^T's multiply before
    copying dP^T's into place); from start values on masked calls (their mask would come after
    the multiply) and above d64 (fewer spills); either when asked."""
    assert _config(monkeypatch, head_dim=64)["FROM_ZERO"] and _config(monkeypatch, head_dim=32)["FROM_ZERO"]
    assert not _config(monkeypatch, head_dim=64, causal=True, window_right=0)["FROM_ZERO"]
    assert not _config(monkeypatch, head_dim=64, window_left=100)["FROM_ZERO"]
    assert not _config(monkeypatch, head_dim=128)["FROM_ZERO"] and not _config(monkeypatch, head_dim=96)["FROM_ZERO"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"FROM_ZERO": true}}')
    assert _config(monkeypatch, head_dim=128)["FROM_ZERO"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"FROM_ZERO": false}}')
    assert not _config(monkeypatch, head_dim=64)["FROM_ZERO"]


def test_dkdv_lse_prep_by_default(monkeypatch):
    """LSE_PREP (h200-20261130-twelfth call 1, h200-20261202-kvregs calls 5 and 7): the dK/dV kernel
    reads bwd_preprocess's lse / scale at every head dim by default; lse itself when asked."""
    for d in (32, 64, 96, 128, 192, 256):
        assert _config(monkeypatch, head_dim=d)["LSE_PREP"]
    assert _config(monkeypatch, head_dim=128, causal=True, window_right=0)["LSE_PREP"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"LSE_PREP": false}}')
    assert not _config(monkeypatch, head_dim=64)["LSE_PREP"] and not _config(monkeypatch, head_dim=256)["LSE_PREP"]


def test_dkdv_persistent_schedule(monkeypatch):
    """decisions.dkdv_dynamic_wins / dkdv_persistent_wins (h200-20261130-twelfth call 4, thirteenth
    call 1): up to d64 a persistent grid taking units from a counter at every length (round-robin
    with deterministic=True: the counter lives in ONE_PASS's dQ buffer, and only up to 1024 keys);
    over d64 round-robin up to 1024 keys, one program per unit from there, but causal d65-128 calls
    from 2k keys take units from the counter (h200-20261202-kvregs call 9, h200-20261203-threshold
    call 1), with GQA from 1k keys (h200-20261203-no-q8 calls 4-5); each when asked."""
    for d in (32, 64):
        for sk in (1024, 16384):
            cfg = _config(monkeypatch, head_dim=d, seqlen=sk, causal=True, window_right=0)
            assert cfg["PERSISTENT"] and cfg["DYNAMIC"] and cfg["ONE_PASS"]
        det = _config(monkeypatch, head_dim=d, seqlen=1024, deterministic=True)
        assert det["PERSISTENT"] and not det["ONE_PASS"]            # round-robin (the launcher)
        assert not _config(monkeypatch, head_dim=d, seqlen=2048, deterministic=True)["PERSISTENT"]
    for d in (96, 128):
        assert _config(monkeypatch, head_dim=d, seqlen=1024)["PERSISTENT"]
        assert _config(monkeypatch, head_dim=d, seqlen=1024, causal=True, window_right=0)["PERSISTENT"]
        assert not _config(monkeypatch, head_dim=d, seqlen=1024)["DYNAMIC"]
        assert not _config(monkeypatch, head_dim=d, seqlen=2048)["PERSISTENT"]
        assert not _config(monkeypatch, head_dim=d, seqlen=4096)["PERSISTENT"]
        assert not _config(monkeypatch, head_dim=d, seqlen=2047, causal=True, window_right=0)["PERSISTENT"]
        for group, sk, dynamic in ((2, 1024, True), (4, 2047, True), (4, 1023, False), (4, 512, False)):
            cfg = _config(monkeypatch, head_dim=d, seqlen=sk, causal=True, window_right=0, group=group)
            assert cfg["DYNAMIC"] == dynamic and cfg["PERSISTENT"] == (dynamic or sk <= 1024)
        assert not _config(monkeypatch, head_dim=d, seqlen=1024, group=4)["DYNAMIC"]      # (full: level, call 5)
        for sk in (2048, 4096):
            cfg = _config(monkeypatch, head_dim=d, seqlen=sk, causal=True, window_right=0)
            assert cfg["PERSISTENT"] and cfg["DYNAMIC"] and cfg["ONE_PASS"] and cfg["HOST_DESC"]
        for window in (dict(window_left=100), dict(causal=True, window_left=100, window_right=0)):
            assert not _config(monkeypatch, head_dim=d, seqlen=4096, **window)["PERSISTENT"]   # (not measured)
        assert not _config(monkeypatch, head_dim=d, seqlen=4096, deterministic=True, causal=True,
                           window_right=0)["PERSISTENT"]                    # (the counter needs ONE_PASS)
    assert not _config(monkeypatch, head_dim=256, seqlen=4096, causal=True, window_right=0)["DYNAMIC"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"PERSISTENT": true}}')
    assert _config(monkeypatch, seqlen=16384)["PERSISTENT"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"PERSISTENT": true, "DYNAMIC": true}}')
    assert _config(monkeypatch, seqlen=16384)["DYNAMIC"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"DYNAMIC": false}}')
    assert not _config(monkeypatch, head_dim=64, seqlen=2048)["PERSISTENT"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"PERSISTENT": false}}')
    assert not _config(monkeypatch, seqlen=1024)["PERSISTENT"]
    assert not _config(monkeypatch, head_dim=64, seqlen=1024)["PERSISTENT"]


def test_persistent_dkdv_programs_cycle_through_every_key_block():
    """A persistent grid's program count is coprime to the key blocks per head (unit u's key
    block is u % key_blocks, program p takes units p, p + P, ...), at most one per SM, and one
    per unit where there are fewer units than SMs."""
    P = gluon._coprime_programs
    assert P(6144, 8, 132) == 131 and P(2048, 128, 132) == 131 and P(1000, 3, 132) == 131
    assert P(1000, 1, 132) == 132 and P(1000, 7, 132) == 132 and P(100, 8, 132) == 100
    for units, blocks in ((6144, 8), (4096, 16), (999, 6)):
        p = P(units, blocks, 132)
        assert {u % blocks for u in range(0, units, p)} == set(range(blocks))     # program 0's key blocks


@pytest.mark.parametrize("head_dim, asked, units_per_head, sms, want_grid, want_kv", [
    (64, {}, 8, 4, 3, 2),                      # 16 units on 4 SMs: 3 programs (coprime to 8), two K/V buffers
    (128, {}, 8, 4, 3, 1),                     # d128: one K/V buffer (two would pass 227 KB)
    (64, {}, 8, 16, 16, 1),                    # no more units than SMs: one program per unit
    (64, {"BLOCK_M": 128, "num_stages": 3, "STAGE_P": True}, 8, 4, 3, 1),   # 263 KB with two buffers
    (64, {"PERSISTENT": False}, 8, 4, 16, 1),
    (64, {"DYNAMIC": True}, 8, 4, 4, 2),       # units from a counter: one program per SM
    (128, {"DYNAMIC": True}, 8, 4, 4, 1),
    (64, {"DYNAMIC": True}, 8, 16, 16, 1),     # no more units than SMs: not persistent, not dynamic
    (64, {"DYNAMIC": True, "ONE_PASS": False}, 8, 4, 3, 2),   # its counter lies past dQ's buffer: static
])
def test_persistent_dkdv_launch(monkeypatch, head_dim, asked, units_per_head, sms, want_grid, want_kv):
    """_dkdv_gluon: a persistent grid only with more units than SMs, its program count coprime
    to the key blocks per head, and two K and V buffers only where shared memory holds them
    (configs.dkdv_gluon_smem, which the compile check holds to the compiled kernels' bytes)."""
    launched = []
    monkeypatch.setattr(gluon, "_launch", lambda kernel, grid, args, consts: launched.append((grid, consts)))
    monkeypatch.setattr(gluon, "_sm_count", lambda device: sms)
    b, h, s = 1, 2, 128 * units_per_head
    q, k, v, do = (torch.randn(b, s, h, head_dim, dtype=torch.bfloat16) for _ in range(4))
    lse, delta = torch.zeros(b, h, s), torch.zeros(b, h, s)
    cfg = {**configs.default("bwd_dkdv", "cuda:sm90", head_dim, torch.bfloat16, gluon=True), "ONE_PASS": True,
           "HOST_DESC": True, "PERSISTENT": True, **asked}
    p = AttnParams(scale=0.1, causal=True)
    scal = dict(scale_log2=0.1, window_left=-1, window_right=0)
    dq_acc = tb._dq_accumulator(q)
    gluon._dkdv_gluon(q, k, v, do, lse, delta, torch.empty_like(k), torch.empty_like(v), dq_acc,
                      None, None, p, cfg, s, s, h, b, head_dim, scal)
    (grid, consts), = launched
    assert grid == (want_grid, 1, 1) and consts["NUM_KV"] == want_kv
    persistent = cfg["PERSISTENT"] and b * h * units_per_head > sms
    assert consts["PERSISTENT"] == persistent
    assert consts["DYNAMIC"] == (persistent and bool(asked.get("DYNAMIC")) and cfg["ONE_PASS"])


@pytest.mark.parametrize("n_kb,heads,tail", [(8, 6, 2), (32, 16, 9), (3, 5, 5), (4, 3, 0), (1, 4, 3)])
def test_dkdv_units_of_the_last_heads_go_heaviest_first(n_kb, heads, tail):
    """backward_gluon_loads._dealt (its own code, run on ints): the counter's hand-outs deal every unit
    once (unit = head * n_kb + key block, _dkdv_tile's numbering); head by head up to the tail's
    first head, then key block by key block across the last `tail` heads, so under a causal mask
    (key block 0 the longest) the tail's units come heaviest first; past the last unit, the
    number itself (the consumers' stop)."""
    dealt = importlib.import_module("fa_ck.backends.triton.backward_gluon_loads")._dealt.fn
    n_units = n_kb * heads
    got = [divmod(dealt(u, n_units, n_kb, tail), n_kb) for u in range(n_units)]
    assert sorted(got) == [(h, kb) for h in range(heads) for kb in range(n_kb)]
    first = (heads - tail) * n_kb
    assert got[:first] == [(h, kb) for h in range(heads - tail) for kb in range(n_kb)]
    assert got[first:] == [(h, kb) for kb in range(n_kb) for h in range(heads - tail, heads)]
    assert [dealt(u, n_units, n_kb, tail) for u in (n_units, n_units + 5)] == [n_units, n_units + 5]


@pytest.mark.parametrize("asked, causal, sms, want", [
    ({"DYNAMIC": True}, True, 8, 2),            # 16 units past the 2 x 8 SMs' worth: the last 2 of 4 heads
    ({"DYNAMIC": True}, True, 4, 1),
    ({"DYNAMIC": True}, True, 16, 4),           # every head
    ({"PERSISTENT": False}, True, 8, 0),        # a program per unit: no counter to deal them
    ({"DYNAMIC": True}, False, 8, 0),           # no causal mask: units weigh alike
    ({"DYNAMIC": True, "TAIL_LPT": False}, True, 8, 0),
    ({"DYNAMIC": True, "ONE_PASS": False}, True, 8, 0),   # round-robin programs: units fixed in advance
])
def test_dkdv_lpt_tail_launch(monkeypatch, asked, causal, sms, want):
    """_dkdv_gluon hands the kernel the tail (TAIL_LPT, launch_gluon._lpt_tail_heads): the last
    heads holding 2 x SMs units (key blocks x heads), on causal calls whose units the counter
    deals (DYNAMIC)."""
    launched = []
    monkeypatch.setattr(gluon, "_launch", lambda kernel, grid, args, consts: launched.append(args))
    monkeypatch.setattr(gluon, "_sm_count", lambda device: sms)
    b, h, s, d = 2, 2, 128 * 8, 64
    q, k, v, do = (torch.randn(b, s, h, d, dtype=torch.bfloat16) for _ in range(4))
    cfg = {**configs.default("bwd_dkdv", "cuda:sm90", d, torch.bfloat16, gluon=True), "ONE_PASS": True,
           "HOST_DESC": True, "PERSISTENT": True, "TAIL_LPT": True, **asked}
    scal = dict(scale_log2=0.1, window_left=-1, window_right=0 if causal else -1)
    gluon._dkdv_gluon(q, k, v, do, torch.zeros(b, h, s), torch.zeros(b, h, s), torch.empty_like(k),
                      torch.empty_like(v), tb._dq_accumulator(q), None, None,
                      AttnParams(scale=0.1, causal=causal, window_right=0 if causal else -1), cfg, s, s, h, b, d, scal)
    (args,), = [launched]
    kernel = importlib.import_module("fa_ck.backends.triton.backward_gluon").bwd_dkdv_gluon_kernel
    runtime = [n for i, n in enumerate(kernel.arg_names) if i not in kernel.constexprs]
    assert len(runtime) == len(args) and dict(zip(runtime, args))["tail_heads"] == want


def test_dynamic_dkdv_launch_refuses_a_buffer_without_its_counter(monkeypatch):
    """DYNAMIC's counter lies past dq_acc's elements: a plain zeros buffer (no room past its end)
    is refused before a launch, not handed to an atomic past its end."""
    monkeypatch.setattr(gluon, "_launch", lambda *a: pytest.fail("launched"))
    monkeypatch.setattr(gluon, "_sm_count", lambda device: 4)
    b, h, s, d = 1, 2, 1024, 64
    q, k, v, do = (torch.randn(b, s, h, d, dtype=torch.bfloat16) for _ in range(4))
    cfg = {**configs.default("bwd_dkdv", "cuda:sm90", d, torch.bfloat16, gluon=True), "ONE_PASS": True,
           "HOST_DESC": True, "PERSISTENT": True, "DYNAMIC": True}
    with pytest.raises(ValueError, match="_dq_accumulator"):
        gluon._dkdv_gluon(q, k, v, do, torch.zeros(b, h, s), torch.zeros(b, h, s), torch.empty_like(k),
                          torch.empty_like(v), torch.zeros(q.shape), None, None, AttnParams(scale=0.1), cfg, s, s, h,
                          b, d, dict(scale_log2=0.1, window_left=-1, window_right=-1))


@pytest.mark.parametrize("device", [
    pytest.param("cpu", marks=pytest.mark.skipif(GPU, reason="the interpreter runs where there is no GPU")),
    pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not GPU, reason="needs a GPU")])])
def test_dq_from_acc_rounds_as_torch_mul(device):
    """backward.dq_from_acc (the one pass's fp32 dQ / scale into the gradient) gives what
    torch.mul(dq_acc, scale, out=dq) does, bit for bit, every element, lengths not a multiple of
    its block. The interpreter's fp32 -> bf16 cast truncates (../shared/notes): there bf16 is
    held to truncation, the GPU's to round-to-nearest-even."""
    from fa_ck.backends.triton.backward import dq_from_acc
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for n in (1, 255, 256, 1000):
            acc = torch.randn(n, device=device) * 300
            want, got = torch.empty(n, dtype=dtype, device=device), torch.full((n,), float("nan"), dtype=dtype,
                                                                               device=device)
            torch.mul(acc, 0.0883883, out=want)
            dq_from_acc[(triton_cdiv(n, 256),)](acc, got, n, 0.0883883, BLOCK=256)
            if dtype == torch.bfloat16 and device == "cpu":    # truncated: the top 16 bits of the fp32 product
                want = ((acc * 0.0883883).view(torch.int32) >> 16).to(torch.int16).view(torch.bfloat16)
            assert torch.equal(got, want), (dtype, n)


def test_dq_accumulator_has_a_zero_counter_past_its_end():
    """The dynamic dK/dV grid's counter: an int32 zero just past dQ's fp32 buffer, which is
    contiguous zeros in q's shape whatever q's strides."""
    q = torch.randn(2, 8, 3, 5, dtype=torch.bfloat16).transpose(1, 2)
    dq_acc = tb._dq_accumulator(q)
    assert dq_acc.shape == q.shape and dq_acc.dtype == torch.float32 and dq_acc.is_contiguous()
    assert dq_acc.storage_offset() == 0 and not dq_acc.any()
    tail = torch.empty(0, dtype=torch.float32).set_(dq_acc.untyped_storage())[dq_acc.numel():]
    assert tail.numel() >= 1 and tail.view(torch.int32)[0].item() == 0


def test_gluon_dkdv_when_asked(monkeypatch):
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ASK)
    cfg = _config(monkeypatch)
    assert cfg["GLUON"] and cfg["ONE_PASS"]                                   # d128: dQ in the same kernel
    assert (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"], cfg["STAGE_P"]) == (64, 128, 4, False)
    assert not _config(monkeypatch, possible=False)["GLUON"]                  # GQA, fp32, softcap, ...
    assert cfg["HOST_DESC"]                                                   # descriptors made on the host
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": true, "HOST_DESC": false}}')
    assert not _config(monkeypatch)["HOST_DESC"]                              # on the device, when asked


def test_dkdv_host_descriptors_by_default_where_they_measured_faster(monkeypatch):
    """decisions.dkdv_host_desc_wins (h200-20261130-ninth call 1, -tenth calls 1 and 6,
    h200-20261202-kvregs call 9): at d64 always, at d128 on full and causal calls and on other
    windows below 4k keys, past d128 on full calls and on masked ones below 4k keys; asked for,
    everywhere."""
    causal = dict(causal=True, window_right=0)
    for seqlen in (1024, 4096):
        assert _config(monkeypatch, head_dim=64, seqlen=seqlen, **causal)["HOST_DESC"]
        assert _config(monkeypatch, head_dim=64, seqlen=seqlen)["HOST_DESC"]
        assert _config(monkeypatch, head_dim=128, seqlen=seqlen)["HOST_DESC"]
        assert _config(monkeypatch, head_dim=128, seqlen=seqlen, **causal)["HOST_DESC"]
        assert _config(monkeypatch, head_dim=128, seqlen=seqlen, window_left=100)["HOST_DESC"] == (seqlen < 4096)
        assert _config(monkeypatch, head_dim=256, seqlen=seqlen)["HOST_DESC"]
        assert _config(monkeypatch, head_dim=256, seqlen=seqlen, **causal)["HOST_DESC"] == (seqlen < 4096)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"HOST_DESC": true}}')
    assert _config(monkeypatch, head_dim=256, seqlen=4096, **causal)["HOST_DESC"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"HOST_DESC": false}}')
    assert not _config(monkeypatch, head_dim=128, seqlen=4096, **causal)["HOST_DESC"]


def test_dkdv_tma_stores_by_default_where_they_measured_faster(monkeypatch):
    """decisions.dkdv_tma_store_wins (h200-20261202-dkdv-store calls 1, 3, 6): dK and dV by TMA stores
    up to 1024 query rows, on one-pass calls and on two-pass ones up to d64; GQA, two-pass calls
    past d64 (deterministic) and longer ones keep plain stores; asked for, any of them; the
    kernel's shared memory counts their staging tiles up to d128."""
    causal = dict(causal=True, window_right=0)
    for d in (64, 128):
        assert _config(monkeypatch, head_dim=d, seqlen=512, **causal)["TMA_STORE"]
        assert _config(monkeypatch, head_dim=d, seqlen=1024)["TMA_STORE"]      # (two passes at d64 full)
        assert not _config(monkeypatch, head_dim=d, seqlen=2048, **causal)["TMA_STORE"]
        assert not _config(monkeypatch, head_dim=d, seqlen=256, group=4)["TMA_STORE"]
    assert _config(monkeypatch, head_dim=64, seqlen=512, deterministic=True)["TMA_STORE"]
    assert not _config(monkeypatch, head_dim=128, seqlen=512, deterministic=True)["TMA_STORE"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"TMA_STORE": true}}')
    assert _config(monkeypatch, head_dim=128, seqlen=4096)["TMA_STORE"]
    cfg = dict(BLOCK_M=64, num_stages=2, ONE_PASS=True)
    assert configs.dkdv_gluon_smem(128, dict(cfg, TMA_STORE=True), torch.bfloat16) == \
        configs.dkdv_gluon_smem(128, cfg, torch.bfloat16) + 2 * 64 * 128 * 2 <= configs.SMEM_BYTES_SM90
    assert configs.dkdv_gluon_smem(256, dict(cfg, ONE_PASS=False, TMA_STORE=True), torch.bfloat16) == \
        configs.dkdv_gluon_smem(256, dict(cfg, ONE_PASS=False), torch.bfloat16)      # (no TMA stores past d128)


def test_one_pass_by_default_wherever_the_gluon_kernel_serves(monkeypatch):
    """ONE_PASS (h200-20261130-seventh calls 5, 9; -tenth calls 1-3): with the Gluon dK/dV kernel
    everywhere, never for deterministic calls, never with backward.py's kernel unless asked."""
    for d in (64, 128):
        for seqlen in (1024, 4096):
            for kw in ({}, dict(causal=True, window_right=0), dict(window_left=100)):
                assert _config(monkeypatch, head_dim=d, seqlen=seqlen, **kw)["ONE_PASS"]
    assert not _config(monkeypatch, deterministic=True)["ONE_PASS"]
    assert not _config(monkeypatch, possible=False)["ONE_PASS"]              # backward.py's kernel
    for d in (136, 256):                     # past d128 the dK/dV kernel has no room for dQ
        assert _config(monkeypatch, head_dim=d)["GLUON"] and not _config(monkeypatch, head_dim=d)["ONE_PASS"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"ONE_PASS": false}}')
    assert _config(monkeypatch)["GLUON"] and not _config(monkeypatch)["ONE_PASS"]


@pytest.mark.skipif(not configs.INTERPRET, reason="runs the call in the interpreter (CPU tensors)")
def test_gluon_dkdv_only_with_a_positive_scale(monkeypatch):
    """The dK/dV kernel starts its multiplies from -lse / scale: a zero or negative scale goes to
    backward.py (the call itself runs in the interpreter here, on Triton's kernels)."""
    from attn_check import rand
    from fa_ck import interface
    asked = []
    real = tb._config
    monkeypatch.setattr(gluon, "_gluon_ok", lambda *args, **kwargs: True)
    monkeypatch.setattr(tb, "_config", lambda kernel, *a, gluon_possible=False, **kw: (
        asked.append((kernel, gluon_possible)), real(kernel, *a, gluon_possible=False, **kw))[1])
    q, k, v = (rand(1, 16, 2, 32, dtype=torch.float32, device="cpu", requires_grad=False) for _ in range(3))
    for scale in (0.2, 0.0, -0.2):
        p = interface._params(q, k, batch=1, causal=True, scale=scale, window_size=(-1, -1), alibi_slopes=None,
                              softcap=0.0, dropout_p=0.0, deterministic=False, fp8=False)
        out, lse = tb.forward(q, k, v, p)
        tb.backward(torch.randn_like(out), q, k, v, out, lse, p)
    assert [g for kernel, g in asked if kernel == "bwd_dkdv"] == [True, False, False]


def test_gluon_dkdv_checks_its_fixed_tile(monkeypatch):
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": true, "BLOCK_N": 64}}')
    with pytest.raises(ValueError, match="the Gluon kernel has BLOCK_N 128 and num_warps 4"):
        _config(monkeypatch)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": true, "ONE_PASS": true}}')
    assert _config(monkeypatch)["ONE_PASS"]                                   # dQ by TMA reduce-adds
    assert not _config(monkeypatch, deterministic=True)["ONE_PASS"]          # they add in any order
    for d in (64, 128):
        assert configs.default("bwd_dkdv", "cuda:sm90", d, torch.bfloat16, gluon=True)["BLOCK_M"] == 64
    for d in (64, 128):
        for c in configs.candidates("bwd_dkdv", "cuda:sm90", d, torch.bfloat16, gluon=True):
            assert (c["BLOCK_N"], c["num_warps"]) == (128, 4) and c["BLOCK_M"] in (32, 64)
    # one pass adds dQ from a wgmma of BLOCK_M rows (64 or more); two passes take 32 queries per step
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 32}}')
    for d in (64, 128):
        with pytest.raises(ValueError, match=r"one pass \(dQ in the Gluon dK/dV kernel\) takes 64 or more queries "
                                             r"per step \(BLOCK_M\), got 32"):
            _config(monkeypatch, head_dim=d)
        cfg = _config(monkeypatch, head_dim=d, deterministic=True)
        assert (cfg["BLOCK_M"], cfg["ONE_PASS"]) == (32, False)


def test_gluon_dkdv_autotune_searches_what_the_switches_take(monkeypatch, tmp_path):
    """Autotune times only the candidates the call's switches take: with one pass none of 32
    queries per step (on the H200 they failed to compile inside the search,
    h200-20261203-standing call 5), with two passes those too; the fastest is kept."""
    from fa_ck.backends.triton import tuning
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    monkeypatch.setenv("FA_CK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    tuning.clear_memo()
    for d in (64, 128):
        q = torch.randn(1, 16, 2, d, dtype=torch.bfloat16)
        for deterministic in (False, True):
            timed = []

            def bench(c):
                timed.append(c)
                return 1.0 + c["BLOCK_M"] / 100 + c["num_stages"] / 10     # 32 queries, 2 stages fastest
            cfg = tb._config("bwd_dkdv", q, d, AttnParams(scale=0.1, causal=True, window_right=0,
                                                          deterministic=deterministic),
                             4096, 4096, tma_possible=True, bench=bench, gluon_possible=True)
            assert timed and all(c["GLUON"] and c["ONE_PASS"] == (not deterministic) for c in timed)
            assert {c["BLOCK_M"] for c in timed} == ({32, 64} if deterministic else {64})
            assert cfg["BLOCK_M"] == (32 if deterministic else 64) and cfg["num_stages"] == 2
    tuning.clear_memo()


def test_gluon_dkdv_past_d128(monkeypatch):
    """Past d128 the dK/dV kernel takes 64-key units (dK / dV split by columns across its two
    warpgroups), 64 queries per step, two passes; it refuses what cannot work there: 128-key
    units, dQ in the same kernel, tiles past shared memory."""
    for d in (136, 200, 256):
        cfg = _config(monkeypatch, head_dim=d)
        assert (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"], cfg["num_stages"]) == (64, 64, 4, 2)
        assert configs.dkdv_gluon_smem(d, cfg, torch.bfloat16) <= configs.SMEM_BYTES_SM90
        for c in configs.candidates("bwd_dkdv", "cuda:sm90", d, torch.bfloat16, gluon=True):
            assert c["BLOCK_N"] == 64 and configs.dkdv_gluon_smem(d, c, torch.bfloat16) <= configs.SMEM_BYTES_SM90
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": true, "BLOCK_N": 128}}')
    with pytest.raises(ValueError, match="the Gluon kernel has BLOCK_N 64 and num_warps 4"):
        _config(monkeypatch, head_dim=256)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": true, "ONE_PASS": true}}')
    with pytest.raises(ValueError, match="past head dim 128 the Gluon dK/dV kernel leaves dQ"):
        _config(monkeypatch, head_dim=256)
    assert _config(monkeypatch, head_dim=256, deterministic=True)["GLUON"]   # (no one pass there anyway)
    # ONE_PASS alone: backward.py's one pass, as before the Gluon kernel served these head dims
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"ONE_PASS": true}}')
    cfg = _config(monkeypatch, head_dim=256)
    assert cfg["ONE_PASS"] and not cfg["GLUON"]
    assert _config(monkeypatch, head_dim=128)["GLUON"] and _config(monkeypatch, head_dim=128)["ONE_PASS"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 128}}')
    with pytest.raises(ValueError, match=r"the Gluon dK/dV kernel needs \d+ bytes of shared memory with BLOCK_M 128 "
                                         r"and num_stages 2"):
        _config(monkeypatch, head_dim=256)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 128, "num_stages": 1}}')
    assert _config(monkeypatch, head_dim=256)["BLOCK_M"] == 128                # single-buffered: fits
    # past d128 neither tile is taken (16 does not compile there; 32 never ran on a GPU); up to
    # d128 two passes accept both: a check of the config only, neither ran on a GPU two-pass
    for bm in (16, 32):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": {"BLOCK_M": bm}}))
        with pytest.raises(ValueError, match=f"takes 64 or 128 queries per step \\(BLOCK_M\\), got {bm}"):
            _config(monkeypatch, head_dim=200)
        assert _config(monkeypatch, head_dim=128, deterministic=True)["BLOCK_M"] == bm   # up to d128 two passes
        with pytest.raises(ValueError, match=f"one pass .* 64 or more queries per step \\(BLOCK_M\\), got {bm}"):
            _config(monkeypatch, head_dim=128)                               # take them, one pass does not
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"STAGE_P": true}}')
    assert _config(monkeypatch, head_dim=256)["STAGE_P"] is False             # staged anyway: the switch is moot
    assert _config(monkeypatch, head_dim=128)["STAGE_P"] is True


def test_gluon_dq_tiles(monkeypatch):
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ASK_DQ)
    cfg = _config(monkeypatch, kernel="bwd_dq", head_dim=64, seqlen=1024)              # asked: served anyway
    assert cfg["GLUON"] and (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"], cfg["num_stages"]) == (128, 128, 4, 3)
    cfg = _config(monkeypatch, kernel="bwd_dq")
    assert (cfg["BLOCK_M"], cfg["BLOCK_N"]) == (128, 64)                      # 128 keys spill at d128
    assert not _config(monkeypatch, kernel="bwd_dq", possible=False)["GLUON"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dq": {"GLUON": true, "BLOCK_M": 64}}')
    with pytest.raises(ValueError, match="the Gluon kernel has BLOCK_M 128 and num_warps 4"):
        _config(monkeypatch, kernel="bwd_dq")
    for d in (64, 128):
        for c in configs.candidates("bwd_dq", "cuda:sm90", d, torch.bfloat16, gluon=True):
            assert (c["BLOCK_M"], c["num_warps"]) == (128, 4) and (d <= 64 or c["BLOCK_N"] == 64)
    monkeypatch.delenv("FA_CK_TRITON_CONFIG")
    cfg = _config(monkeypatch, kernel="bwd_dq", head_dim=256)
    assert cfg["GLUON"] and (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_stages"]) == (128, 32, 3)   # 64 keys spill
    cands = configs.candidates("bwd_dq", "cuda:sm90", 256, torch.bfloat16, gluon=True)
    assert all(c["BLOCK_N"] == 32 and configs.dq_gluon_smem(256, c, torch.bfloat16) <= configs.SMEM_BYTES_SM90
               for c in cands)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dq": {"BLOCK_N": 64}}')      # 64 keys 3-deep: 320 KB
    with pytest.raises(ValueError, match=r"the Gluon dQ kernel needs 328704 bytes of shared memory with BLOCK_N 64"):
        _config(monkeypatch, kernel="bwd_dq", head_dim=256)
    assert _config(monkeypatch, kernel="bwd_dq", head_dim=128)["BLOCK_N"] == 64


# ---------------------------------------------------------------------------- on an sm90 GPU

gpu = pytest.mark.skipif(not SM90 or bool(gluon._GLUON_ERROR), reason="needs an sm90 GPU and Gluon")


# Each dK/dV GPU test runs every way of feeding the dV and dK multiplies: P^T and dS^T in
# registers (32 queries per step at d128), staged through shared memory (64; the default at
# d128), and both with dQ added in the same kernel by TMA reduce-adds (one pass: no dQ kernel);
# and with host-made descriptors (HOST_DESC; varlen calls build theirs on the device regardless).
DKDV_ASKS = {"registers": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 32, "STAGE_P": false, "ONE_PASS": false, '
                           '"HOST_DESC": false}}',
             "staged": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": true, "ONE_PASS": false, '
                       '"HOST_DESC": false}}',
             "one_pass": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": true, "ONE_PASS": true, '
                         '"HOST_DESC": false}}',
             "one_pass_registers": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, "ONE_PASS": true, '
                                   '"HOST_DESC": false}}',
             # q, k, v, dO and dQ's buffer as host-made descriptors (the default where they measured faster)
             "host_desc_one_pass": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, "ONE_PASS": true, '
                                   '"HOST_DESC": true}}',
             "host_desc_registers": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 32, "STAGE_P": false, "ONE_PASS": false, '
                                    '"HOST_DESC": true}}',
             # S^T and dP^T from zero (the default up to d64) or from start values (over d64), asked for
             # at every head dim (start values with lse itself, not bwd_preprocess's lse / scale)
             "from_zero": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, "ONE_PASS": true, '
                          '"HOST_DESC": true, "FROM_ZERO": true}}',
             "start_values": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, "ONE_PASS": true, '
                             '"HOST_DESC": true, "FROM_ZERO": false, "LSE_PREP": false}}',
             # lse / scale from bwd_preprocess, with start values and from zero, per-program descriptors too
             "lse_prep": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, "ONE_PASS": true, '
                         '"HOST_DESC": true, "FROM_ZERO": false, "LSE_PREP": true}}',
             "lse_prep_from_zero_device_desc": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, '
                                               '"ONE_PASS": true, "HOST_DESC": false, "FROM_ZERO": true, '
                                               '"LSE_PREP": true}}',
             # persistent programs (host-made descriptors only: varlen calls run one program per unit)
             "persistent": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, "ONE_PASS": true, '
                           '"HOST_DESC": true, "PERSISTENT": true, "DYNAMIC": false}}',
             "persistent_two_pass": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, '
                                    '"ONE_PASS": false, "HOST_DESC": true, "PERSISTENT": true}}',
             # units handed out by an atomic counter (ONE_PASS: the counter lies past dQ's buffer)
             "dynamic": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, "ONE_PASS": true, '
                        '"HOST_DESC": true, "PERSISTENT": true, "DYNAMIC": true}}',
             # dK and dV from the accumulators' registers, not by TMA stores (the default up to d128)
             "plain_stores": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false, "ONE_PASS": true, '
                             '"HOST_DESC": true, "TMA_STORE": false}}',
             "plain_stores_device_desc": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 32, "STAGE_P": false, '
                                         '"ONE_PASS": false, "HOST_DESC": false, "TMA_STORE": false}}'}


# every ask but the plain-store ones takes TMA stores at any length (by default only up to 1024 rows)
DKDV_ASKS = {k: v if "TMA_STORE" in v else v.replace('"GLUON": true', '"GLUON": true, "TMA_STORE": true', 1)
             for k, v in DKDV_ASKS.items()}


PROGRAMS = 1        # SMs a persistent ask sees (gluon_dkdv_calls): one program takes every unit


@pytest.fixture(params=sorted(DKDV_ASKS))
def gluon_dkdv_calls(request, monkeypatch):
    """Asks for the Gluon dK/dV kernel (one way of staging its operands) and counts its launches.
    Persistent asks see a GPU of PROGRAMS SMs, so that small calls too (two units at least) give
    a program several units, empty ones among them under windows."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", DKDV_ASKS[request.param])
    asked = json.loads(DKDV_ASKS[request.param])["bwd_dkdv"]
    if asked.get("PERSISTENT"):
        monkeypatch.setattr(gluon, "_sm_count", lambda device: PROGRAMS)
    launches = record_launches(monkeypatch, plans, gluon.bwd_dkdv_gluon_kernel)
    calls = count_calls(monkeypatch, gluon, "_dkdv_gluon")
    dq_calls = count_calls(monkeypatch, gluon, "_dq_gluon")
    yield calls
    cfgs = [args[12] for args, _ in calls]                    # _dkdv_gluon's cfg
    # the switch reached the kernel (varlen calls build their descriptors on the device)
    assert all(c["HOST_DESC"] == bool(asked.get("HOST_DESC")) for _, c in launches if not c["VARLEN"])
    assert all(c["FROM_ZERO"] == asked["FROM_ZERO"] for _, c in launches if "FROM_ZERO" in asked)
    assert all(c["LSE_PREP"] == asked["LSE_PREP"] for _, c in launches if "LSE_PREP" in asked)
    if asked.get("PERSISTENT"):       # where there are more units than SMs (host-made descriptors)
        assert all(not c["PERSISTENT"] or (c["HOST_DESC"] and grid[0] <= PROGRAMS) for grid, c in launches)
        assert any(c["PERSISTENT"] for _, c in launches)
    elif "PERSISTENT" in asked:
        assert not any(c["PERSISTENT"] for _, c in launches)
    # (DYNAMIC: asked for, or by default up to d64 (and on causal d128 calls from 2k keys, with
    # GQA from 1k: none here); the launcher needs ONE_PASS for it)
    assert all(c["DYNAMIC"] == (c["PERSISTENT"] and c["ONE_PASS"] and bool(
        asked.get("DYNAMIC", decisions.dkdv_dynamic_wins(c["BLOCK_D"])))) for _, c in launches)
    assert all(bool(c["STAGE_P"]) == asked["STAGE_P"] and bool(c["ONE_PASS"]) == asked["ONE_PASS"] and
               bool(c["HOST_DESC"]) == asked.get("HOST_DESC", False) for c in cfgs)
    if asked["ONE_PASS"]:
        assert not dq_calls                                   # dQ came from the dK/dV kernel
    # dK / dV by TMA stores as asked, through host-made descriptors only (not varlen's) and up to
    # d128 (past it: no room)
    narrow = [c for _, c in launches if c["BLOCK_D"] <= 128]
    assert all(c["TMA_STORE"] == (asked["TMA_STORE"] and c["HOST_DESC"]) for c in narrow)
    assert not any(c["TMA_STORE"] for _, c in launches if c["BLOCK_D"] > 128)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [
    (2, 1000, 1000, 4, 4, 128), (1, 2048, 2048, 2, 2, 64), (2, 777, 1531, 2, 2, 96), (3, 1531, 129, 2, 2, 128),
    (2, 1, 300, 2, 2, 128), (1, 300, 1, 2, 2, 64), (1, 130, 257, 2, 2, 32), (2, 300, 513, 2, 2, 16),
])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_dkdv_matches_reference(gluon_dkdv_calls, dtype, shape, causal):
    check(*shape, dtype=dtype, device="cuda", causal=causal, same_precision=True)
    assert gluon_dkdv_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("window", [(64, 0), (200, 37), (5, -1)])
@pytest.mark.parametrize("head_dim", [128, 64])      # (up to d64 the one-pass kernel takes K from registers)
def test_gluon_dkdv_windows_and_varlen(gluon_dkdv_calls, window, head_dim):
    check(2, 900, 1100, 2, 2, head_dim, dtype=torch.bfloat16, device="cuda", window_size=window, same_precision=True)
    check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 2, 2, head_dim, dtype=torch.bfloat16,
                 device="cuda", window_size=window, same_precision=True)
    assert gluon_dkdv_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("sq,sk,group", [(4096, 4096, 1), (3000, 4096, 1), (2048, 2048, 1), (1024, 1024, 2)])
def test_gluon_dkdv_counter_by_default_on_causal_d128_from_2k_keys(monkeypatch, sq, sk, group):
    """The default on causal d128 calls from 2k keys, with GQA from 1k (decisions.dkdv_dynamic_wins):
    a persistent grid, units from the counter; on a GPU seen as 4 SMs, so each program takes many
    (2 kv heads x 8-32 key blocks); the gradients against the float64 reference."""
    monkeypatch.delenv("FA_CK_TRITON_CONFIG", raising=False)
    monkeypatch.setattr(gluon, "_sm_count", lambda device: 4)
    launches = record_launches(monkeypatch, plans, gluon.bwd_dkdv_gluon_kernel)
    check(1, sq, sk, 2 * group, 2, 128, dtype=torch.bfloat16, device="cuda", causal=True, same_precision=True)
    assert launches and all(c["DYNAMIC"] and c["PERSISTENT"] and grid[0] == 4 for grid, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("sms", [12, 5, 32, 132])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_gluon_dkdv_last_heads_heaviest_first(monkeypatch, sms, head_dim):
    """TAIL_LPT (the default on DYNAMIC's causal calls): the counter deals the last heads' units key
    block by key block across them; GQA (2 q heads per kv head, 8 (batch, kv head) pairs of 8 key
    blocks) on a GPU seen as 12, 5 or 32 SMs: the last 3, 2 or all 8 pairs (every hand-out
    remapped); at 132 SMs a program per unit (64 units), no counter; the gradients against the
    float64 reference."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": {"GLUON": True, "ONE_PASS": True,
                                                                        "PERSISTENT": True, "DYNAMIC": True}}))
    monkeypatch.setattr(gluon, "_sm_count", lambda device: sms)
    tails = []
    real = gluon._lpt_tail_heads
    monkeypatch.setattr(gluon, "_lpt_tail_heads", lambda *a: tails.append(real(*a)) or tails[-1])
    launches = record_launches(monkeypatch, plans, gluon.bwd_dkdv_gluon_kernel)
    check(2, 1024, 1024, 8, 4, head_dim, dtype=torch.bfloat16, device="cuda", causal=True, same_precision=True)
    assert launches and all(c["DYNAMIC"] for _, c in launches) == (sms < 64)   # (64 units: more than SMs)
    assert tails == ([{12: 3, 5: 2, 32: 8}[sms]] if sms < 64 else [])


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_gluon_dkdv_persistent_takes_units_in_turn(monkeypatch, causal, head_dim):
    """PERSISTENT with several units per program (4 x 8 heads x 16 key blocks = 512 units on at
    most one program per SM; the last key block partial): dK and dV bit for bit those of one
    program per unit, dQ to fp32 summation order (its reduce-adds land in another order); then
    the gradients against the float64 reference."""
    launches = record_launches(monkeypatch, plans, gluon.bwd_dkdv_gluon_kernel)
    q, k, v = (torch.randn(4, 2000, 8, head_dim, dtype=torch.bfloat16, device="cuda", requires_grad=True)
               for _ in range(3))
    do = torch.randn_like(q)
    grads = {}
    for persistent, dynamic in ((True, False), (True, True), (False, False)):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": {"PERSISTENT": persistent,
                                                                            "DYNAMIC": dynamic}}))
        for t in (q, k, v):
            t.grad = None
        fa_ck.flash_attn_func(q, k, v, causal=causal).backward(do)
        assert launches[-1][1]["PERSISTENT"] == persistent and launches[-1][1]["DYNAMIC"] == dynamic
        assert (launches[-1][0][0] < 512) == persistent               # programs took several units
        grads[persistent, dynamic] = [t.grad.clone() for t in (q, k, v)]
    dq1, dk1, dv1 = grads[False, False]
    for dq, dk, dv in (grads[True, False], grads[True, True]):
        assert torch.equal(dk, dk1) and torch.equal(dv, dv1)
        assert (dq.float() - dq1.float()).abs().max().item() <= 2 * dq1.float().abs().max().item() * 2 ** -8
    # another config string than above: a replayed plan would record no launch
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": {"GLUON": True, "PERSISTENT": True}}))
    check(4, 2000, 2000, 8, 8, head_dim, dtype=torch.bfloat16, device="cuda", causal=causal, same_precision=True)
    assert launches[-1][1]["PERSISTENT"]


@gpu
@pytest.mark.gpu
def test_dynamic_dkdv_replays_and_graphs_start_their_counter_afresh(monkeypatch):
    """DYNAMIC (the d64 default; 512 units here) takes its units from a counter in dQ's fresh
    buffer: a replayed plan and each replay of a captured CUDA graph start it from zero, so every
    unit is done once each time. dK and dV bit for bit those of one program per unit (run last,
    its own config string), dQ to fp32 summation order."""
    launches = record_launches(monkeypatch, plans, gluon.bwd_dkdv_gluon_kernel)
    q, k, v = (torch.randn(4, 2000, 8, 64, dtype=torch.bfloat16, device="cuda", requires_grad=True)
               for _ in range(3))
    do = torch.randn_like(q)

    def grads():
        return torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=True), (q, k, v), do)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": {"PERSISTENT": True, "DYNAMIC": True}}))
    # Every call before the capture on a side stream: autograd keeps q, k, v's gradient nodes on
    # the stream of their first backward, and the default stream there would break the capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        first = grads()                                      # the slow path, recorded
        assert launches[-1][1]["DYNAMIC"] and launches[-1][0][0] < 512
        again = grads()                                      # the replayed plan
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = grads()
    results = [first, again]
    for _ in range(2):
        graph.replay()
        torch.cuda.synchronize()
        results.append([g.clone() for g in captured])
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": {"PERSISTENT": False}}))
    dq1, dk1, dv1 = grads()
    assert not launches[-1][1]["PERSISTENT"]
    for dq, dk, dv in results:
        assert torch.equal(dk, dk1) and torch.equal(dv, dv1)
        assert (dq.float() - dq1.float()).abs().max().item() <= 2 * dq1.float().abs().max().item() * 2 ** -8


@pytest.fixture(params=[True, False], ids=["dq_tma_store", "dq_plain_store"])
def gluon_dq_calls(request, monkeypatch):
    """Asks for the Gluon dQ kernel (and two passes, where the dK/dV kernel would add dQ itself),
    its dQ by a TMA store (the default) or by plain stores, and counts its launches; afterwards
    checks the store reached the kernel."""
    ask = json.loads(ASK_DQ)
    ask["bwd_dq"]["TMA_STORE"] = request.param
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({**ask, "bwd_dkdv": {"ONE_PASS": False}}))
    launches = record_launches(monkeypatch, plans, gluon.bwd_dq_gluon_kernel)
    yield count_calls(monkeypatch, gluon, "_dq_gluon")
    assert launches and all(c["TMA_STORE"] == request.param for _, c in launches)


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
@pytest.mark.parametrize("dkdv", sorted(DKDV_ASKS))
def test_gluon_dq_windows_varlen_and_both_kernels(monkeypatch, gluon_dq_calls, window, dkdv):
    check(2, 900, 1100, 4, 2, 128, dtype=torch.bfloat16, device="cuda", window_size=window, same_precision=True)
    check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 2, 2, 128, dtype=torch.bfloat16,
                 device="cuda", window_size=window, same_precision=True)
    assert gluon_dq_calls
    fixture_ask = json.loads(os.environ["FA_CK_TRITON_CONFIG"])       # the Gluon dQ kernel, its store as asked
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({**fixture_ask, **json.loads(DKDV_ASKS[dkdv])}))
    dkdv_calls, before = count_calls(monkeypatch, gluon, "_dkdv_gluon"), len(gluon_dq_calls)
    check(2, 1000, 1000, 2, 2, 128, dtype=torch.bfloat16, device="cuda", causal=True, same_precision=True)
    one_pass = json.loads(DKDV_ASKS[dkdv])["bwd_dkdv"]["ONE_PASS"]
    assert dkdv_calls and (len(gluon_dq_calls) > before) == (not one_pass)   # one pass: no dQ kernel


# Past d128 (backward_gluon._bwd_unit_dsplit): 64-key units, dK / dV split by columns across the
# two warpgroups, two passes (dQ by the Gluon dQ kernel, 32 keys per block), each way it can run
WIDE_ASKS = {"default": {},
             "start_values": {"FROM_ZERO": False, "LSE_PREP": False},
             "from_zero_lse_prep": {"FROM_ZERO": True, "LSE_PREP": True},
             "device_desc": {"HOST_DESC": False},
             "persistent": {"HOST_DESC": True, "PERSISTENT": True},
             "128_queries_single_buffered": {"BLOCK_M": 128, "num_stages": 1}}


@pytest.fixture(params=sorted(WIDE_ASKS))
def wide_backward_calls(request, monkeypatch):
    """One way of running the Gluon backward past d128; counts both kernels' launches and checks
    the switches reached them."""
    asked = WIDE_ASKS[request.param]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": asked}))
    if asked.get("PERSISTENT"):
        monkeypatch.setattr(gluon, "_sm_count", lambda device: PROGRAMS)
    dkdv = record_launches(monkeypatch, plans, gluon.bwd_dkdv_gluon_kernel)
    dq = record_launches(monkeypatch, plans, gluon.bwd_dq_gluon_kernel)
    yield dkdv, dq
    assert dkdv and dq and all(c["BLOCK_D"] > 128 and not c["ONE_PASS"] for _, c in dkdv)
    for key in ("FROM_ZERO", "LSE_PREP", "BLOCK_M"):
        assert all(c[key] == asked[key] for _, c in dkdv if key in asked)
    assert all(c["HOST_DESC"] == asked["HOST_DESC"] for _, c in dkdv if "HOST_DESC" in asked and not c["VARLEN"])
    if asked.get("PERSISTENT"):
        assert any(c["PERSISTENT"] for _, c in dkdv)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [
    (2, 1000, 1000, 2, 2, 256), (1, 777, 1531, 2, 2, 160), (3, 300, 129, 2, 2, 192), (2, 1, 300, 2, 2, 200),
    (1, 513, 64, 2, 2, 136),
])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_backward_past_d128_matches_reference(wide_backward_calls, dtype, shape, causal):
    check(*shape, dtype=dtype, device="cuda", causal=causal, same_precision=True)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("window", [(64, 0), (200, 37), (5, -1)])
def test_gluon_backward_past_d128_windows_and_varlen(wide_backward_calls, window):
    check(2, 900, 1100, 2, 2, 256, dtype=torch.bfloat16, device="cuda", window_size=window, same_precision=True)
    check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 2, 2, 192, dtype=torch.bfloat16,
                 device="cuda", window_size=window, same_precision=True)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_backward_past_d128_gqa_and_persistent_units(monkeypatch, causal):
    """GQA past d128: both Gluon kernels, the dK/dV kernel's units stepping through their q heads.
    Then persistent programs with several 64-key units each (4 x 4 heads x 32 key blocks on one
    program per SM): dK and dV bit for bit those of one program per unit."""
    dkdv = record_launches(monkeypatch, plans, gluon.bwd_dkdv_gluon_kernel)
    dq = record_launches(monkeypatch, plans, gluon.bwd_dq_gluon_kernel)
    check(2, 1000, 1000, 4, 2, 256, dtype=torch.bfloat16, device="cuda", causal=causal, same_precision=True)
    assert dq and dkdv and dkdv[-1][1]["GROUP"] == 2 and dkdv[-1][1]["HOST_DESC"]
    q, k, v = (torch.randn(4, 2000, 4, 256, dtype=torch.bfloat16, device="cuda", requires_grad=True)
               for _ in range(3))
    do = torch.randn_like(q)
    grads = {}
    for persistent in (True, False):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": {"PERSISTENT": persistent}}))
        grads[persistent] = torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=causal), (q, k, v), do)
        assert dkdv[-1][1]["PERSISTENT"] == persistent and (dkdv[-1][0][0] < 512) == persistent
    for a, b in zip(grads[True], grads[False]):
        assert torch.equal(a, b)


@pytest.mark.skipif(not configs.INTERPRET, reason="runs the call in the interpreter (CPU tensors)")
def test_gluon_dkdv_serves_gqa_through_host_descriptors(monkeypatch):
    """GQA reaches the Gluon dK/dV kernel (host-made 4-D descriptors over every q head: a unit
    steps through its kv head's q heads); varlen GQA does not (its descriptors are per sequence)."""
    from attn_check import rand
    from fa_ck import interface
    asked = []
    real = tb._config
    monkeypatch.setattr(gluon, "_gluon_ok", lambda *args, **kwargs: True)
    monkeypatch.setattr(tb, "_config", lambda kernel, *a, gluon_possible=False, **kw: (
        asked.append((kernel, gluon_possible)), real(kernel, *a, gluon_possible=False, **kw))[1])
    q = rand(2, 16, 4, 32, dtype=torch.float32, device="cpu", requires_grad=False)
    k, v = (rand(2, 16, 2, 32, dtype=torch.float32, device="cpu", requires_grad=False) for _ in range(2))
    p = interface._params(q, k, batch=2, causal=True, scale=0.2, window_size=(-1, -1), alibi_slopes=None,
                          softcap=0.0, dropout_p=0.0, deterministic=False, fp8=False)
    out, lse = tb.forward(q, k, v, p)
    tb.backward(torch.randn_like(out), q, k, v, out, lse, p)
    assert [g for kernel, g in asked if kernel == "bwd_dkdv"] == [True]
    asked.clear()
    cu = torch.tensor([0, 7, 16], dtype=torch.int32)
    qv, kv_, vv = q.reshape(32, 4, 32)[:16], k.reshape(32, 2, 32)[:16], v.reshape(32, 2, 32)[:16]
    p = interface._params(qv, kv_, batch=2, causal=True, scale=0.2, window_size=(-1, -1), alibi_slopes=None,
                          softcap=0.0, dropout_p=0.0, deterministic=False, fp8=False, seqlens=(9, 9))
    import dataclasses
    p = dataclasses.replace(p, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=9, max_seqlen_k=9)
    out, lse = tb.forward(qv, kv_, vv, p)
    tb.backward(torch.randn_like(out), qv, kv_, vv, out, lse, p)
    assert [g for kernel, g in asked if kernel == "bwd_dkdv"] == [False]


def test_gqa_dkdv_in_gluon_where_it_measured_faster(monkeypatch):
    """decisions.gqa_dkdv_gluon_wins (h200-20261201-fifteenth call 9): every group up to 4 q heads
    per kv head; more only on full calls or from 2048 keys (8 per kv head at S1024 causal: -21 %);
    asked for, everywhere the kernel can serve."""
    causal = dict(causal=True, window_right=0)
    for sk in (512, 1024, 4096):
        for masked in (False, True):
            assert decisions.gqa_dkdv_gluon_wins(1, sk, masked) and decisions.gqa_dkdv_gluon_wins(4, sk, masked)
            assert decisions.gqa_dkdv_gluon_wins(8, sk, masked) == (not masked or sk > 1024)
        for d in (64, 128, 256):
            assert _config(monkeypatch, head_dim=d, seqlen=sk, group=4, **causal)["GLUON"]
            assert _config(monkeypatch, head_dim=d, seqlen=sk, group=8)["GLUON"]
            assert _config(monkeypatch, head_dim=d, seqlen=sk, group=8, **causal)["GLUON"] == (sk > 1024)
            assert _config(monkeypatch, head_dim=d, seqlen=sk, group=8, window_left=100)["GLUON"] == (sk > 1024)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ASK)
    assert _config(monkeypatch, head_dim=64, seqlen=1024, group=8, **causal)["GLUON"]
    assert not _config(monkeypatch, head_dim=64, seqlen=1024, group=8, possible=False, **causal)["GLUON"]


@pytest.fixture
def gqa_dkdv_launches(monkeypatch):
    """The Gluon dK/dV kernel's launches under GQA, by default (no asks)."""
    monkeypatch.delenv("FA_CK_TRITON_CONFIG", raising=False)
    launches = record_launches(monkeypatch, plans, gluon.bwd_dkdv_gluon_kernel)
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
    """GQA with windows, by default and with two passes, persistent programs round-robin and from
    the counter (DYNAMIC; several units each on 4 SMs), per-program descriptors asked for (GQA
    takes host-made ones regardless) and deterministic=True; d64 and d128. (The "dynamic" and
    "device_desc" cases were added after the fifteenth part's GPU calls: not yet run on a GPU.)"""
    over = {"two_pass": {"ONE_PASS": False}, "persistent": {"PERSISTENT": True, "DYNAMIC": False},
            "dynamic": {"PERSISTENT": True, "DYNAMIC": True}, "device_desc": {"HOST_DESC": False}}.get(asked, {})
    if over:
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"bwd_dkdv": over}))
    if asked in ("persistent", "dynamic"):
        monkeypatch.setattr(gluon, "_sm_count", lambda device: 4)
    for d in (64, 128):
        check(2, 900, 1100, 4, 2, d, dtype=torch.bfloat16, device="cuda", window_size=window, same_precision=True,
              deterministic=asked == "deterministic")
        assert gqa_dkdv_launches[-1][1]["GROUP"] == 2
        if asked in ("persistent", "dynamic"):
            assert gqa_dkdv_launches[-1][1]["PERSISTENT"]
            assert gqa_dkdv_launches[-1][1]["DYNAMIC"] == (asked == "dynamic")
