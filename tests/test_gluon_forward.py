"""The Hopper forward in Gluon (backends/triton/forward_gluon.py): which calls it serves, its
configuration checks (CPU), and its results against the float64 reference on an sm90 GPU.
Gluon has no interpreter: on the CPU the kernel is only compiled for sm90
(test_triton_kernels.py::test_sm90_compiles_the_edge_shapes runs it through the scan)."""
import importlib
import json

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import fa_ck
from attn_check import check, check_varlen, count_calls, record_launches
from conftest import GPU
from fa_ck.backends.triton.common import key_blocks, warpgroup_blocks
from fa_ck.params import AttnParams

tb = importlib.import_module("fa_ck.backends.triton")      # (fa_ck.backends is the function)
gluon = importlib.import_module("fa_ck.backends.triton.launch_gluon")
plans = importlib.import_module("fa_ck.backends.triton.plans")
configs = tb.configs
decisions = importlib.import_module("fa_ck.backends.triton.decisions")
SM90 = GPU and torch.cuda.get_device_capability() == (9, 0)
DEVICE = "cuda" if GPU else "cpu"


def _params(**kw):
    return AttnParams(scale=0.125, **kw)


def _gluon_ok(dtype=torch.bfloat16, d=128, **kw):
    q = torch.randn(2, 64, 4, d, dtype=dtype)
    return gluon._gluon_ok(q, q, q, q, _params(**kw))


@pytest.mark.skipif(bool(gluon._GLUON_ERROR), reason="this Triton has no Gluon Hopper API")
def test_calls_the_gluon_forward_serves(monkeypatch):
    monkeypatch.setattr(configs, "INTERPRET", False)
    assert _gluon_ok() and _gluon_ok(torch.float16, 64) and _gluon_ok(window_left=16, window_right=0)
    assert not _gluon_ok(torch.float32)
    assert _gluon_ok(d=256) and _gluon_ok(torch.float16, 160)   # the forward's head dims reach 256
    assert not _gluon_ok(d=288)
    assert not _gluon_ok(softcap=30.0)
    assert not _gluon_ok(alibi_slopes=torch.ones(4))
    assert not _gluon_ok(dropout_p=0.1)
    q = torch.randn(2, 64, 4, 128, dtype=torch.bfloat16)
    assert not gluon._gluon_ok(q[..., ::2], q[..., ::2], q[..., ::2], q[..., ::2], _params())   # strided head dim
    monkeypatch.setattr(configs, "INTERPRET", True)
    assert not _gluon_ok()                                  # no Gluon interpreter


@pytest.mark.skipif(bool(gluon._GLUON_ERROR), reason="this Triton has no Gluon Hopper API")
def test_fp8_calls_the_gluon_forward_serves(monkeypatch):
    """fp8 (quantised e4m3fn q, k; v keys-contiguous, its rows 16-byte aligned for TMA): served
    at head dims 33-128 by default (forward.py's fp8 kernel below), never in the fnuz format
    or with plain v."""
    monkeypatch.setattr(configs, "INTERPRET", False)
    f8 = torch.float8_e4m3fn
    q = torch.randn(2, 64, 4, 128).to(f8)
    v = tb.quantize.keys_contiguous(torch.randn(2, 64, 4, 128).to(f8))
    out = torch.empty(2, 64, 4, 128, dtype=torch.bfloat16)
    assert gluon._gluon_ok(q, q, v, out, _params(fp8=True))
    assert not gluon._gluon_ok(q, q, q, out, _params(fp8=True))                  # v not keys-contiguous
    v_40 = tb.quantize.keys_contiguous(torch.randn(2, 40, 4, 128).to(f8))        # rows of 40 keys, padded to 48
    assert v_40.stride() == (4 * 128 * 48, 1, 128 * 48, 48)
    assert gluon._gluon_ok(q[:, :40], q[:, :40], v_40, out[:, :40], _params(fp8=True))
    v_odd = torch.randn(2, 4, 128, 40).to(f8).permute(0, 3, 1, 2)             # a caller's rows of 40 bytes
    assert not gluon._gluon_ok(q[:, :40], q[:, :40], v_odd, out[:, :40], _params(fp8=True))
    fnuz = torch.float8_e4m3fnuz
    assert not gluon._gluon_ok(q.to(fnuz), q.to(fnuz), v.to(fnuz), out, _params(fp8=True))
    assert configs.switches("fwd", "cuda:sm90", 128, True)["GLUON"]
    assert configs.switches("fwd", "cuda:sm90", 96, True)["GLUON"]
    assert configs.switches("fwd", "cuda:sm90", 64, True)["GLUON"]
    assert configs.switches("fwd", "cuda:sm90", 33, True)["GLUON"]
    assert not configs.switches("fwd", "cuda:sm90", 32, True)["GLUON"]


@pytest.mark.skipif(bool(gluon._GLUON_ERROR), reason="this Triton has no Gluon Hopper API")
def test_host_descriptors():
    """The 4-D descriptors the launchers make: (batch, heads, rows, head_dim) over (B, S, H, D)
    tensors of any layout, (batch, heads, head_dim, keys) for fp8's keys-contiguous v; refused for
    empty and expanded (stride-0) tensors, which build theirs on the device."""
    q = torch.randn(2, 4, 300, 64, dtype=torch.bfloat16).transpose(1, 2)        # SDPA layout seen as BSHD
    d = gluon._desc4(q, 128, 64)
    assert isinstance(d, gluon.TensorDescriptor) and d.base is q and d.padding == "zero"
    assert (d.shape, d.strides, d.block_shape) == ([2, 4, 300, 64], [4 * 300 * 64, 300 * 64, 64, 1], [1, 1, 128, 64])
    assert d.layout == gluon._smem_layout4([1, 1, 128, 64], torch.bfloat16)
    v = tb.quantize.keys_contiguous(torch.randn(2, 304, 4, 128).to(torch.float8_e4m3fn))
    d = gluon._desc4(v, 128, 128, keys_contiguous=True)
    assert (d.shape, d.strides) == ([2, 4, 128, 304], [4 * 128 * 304, 128 * 304, 304, 1])
    assert gluon._host_desc_ok(q, v)
    assert not gluon._host_desc_ok(q, q[:, :0])                                    # no tokens
    assert not gluon._host_desc_ok(q[:1].expand(2, -1, -1, -1))                   # batch stride 0
    assert gluon._host_desc_ok(q[:1])                                             # one batch entry: its stride is moot


@pytest.mark.skipif(bool(gluon._GLUON_ERROR), reason="this Triton has no Gluon Hopper API")
@pytest.mark.parametrize("seqlen, heads, sms, want_grid", [
    (384, 2 * 64, 132, 131),      # 3 query blocks: 2 units per head, 256 units: 131 programs
    (640, 256, 132, 131),         # 5 query blocks, 3 units per head (132 = 3 x 44)
    (896, 256, 132, 131),         # 7 query blocks, 4 units per head
    (512, 128, 132, 132),         # 4 query blocks: 2 units per head of equal weight, every SM
    (384, 32, 132, 64),           # fewer units than SMs: one program per unit
])
def test_gluon_forward_persistent_grid_cycles_through_every_unit(monkeypatch, seqlen, heads, sms, want_grid):
    """The persistent forward pairs a head's k-th heaviest and k-th lightest query blocks into a
    unit; with an odd count of blocks the middle one is a unit alone, half as heavy. The program
    count is then coprime to the units per head, so each program takes all of them in turn."""
    launched = []
    monkeypatch.setattr(gluon, "_launch", lambda kernel, grid, args, consts: launched.append(grid))
    monkeypatch.setattr(gluon, "_sm_count", lambda device: sms)
    b, d = 1, 64
    q, k, v, out = (torch.randn(b, seqlen, heads, d, dtype=torch.bfloat16) for _ in range(4))
    lse = torch.empty(b, heads, seqlen)
    cfg = {**configs.default("fwd", "cuda:sm90", d, torch.bfloat16, gluon=True), "PERSISTENT": True}
    scal = dict(scale_log2=0.1, window_left=-1, window_right=0)
    gluon._forward_gluon(q, k, v, out, lse, None, None, None, None, None, _params(causal=True), cfg,
                         seqlen, seqlen, heads, heads, b, d, scal, 1.0)
    (grid,) = launched
    assert grid == (want_grid, 1, 1)
    per_head = (seqlen // 128 + 1) // 2
    if seqlen // 128 % 2 and want_grid < b * heads * per_head:     # program 0's units
        assert {u % per_head for u in range(0, b * heads * per_head, want_grid)} == set(range(per_head))


def test_gluon_by_default_where_it_measured_faster(monkeypatch):
    assert decisions.gluon_wins("fwd", 128, 1024) and decisions.gluon_wins("fwd", 96, 300, masked=True)
    assert decisions.gluon_wins("fwd", 64, 4096, masked=True) and decisions.gluon_wins("fwd", 64, 1024)
    assert decisions.gluon_wins("fwd", 64, 1024, masked=True)          # short masked d64 too, since RAW_MAX
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    q = torch.randn(1, 16, 2, 64, dtype=torch.bfloat16)
    causal = _params(causal=True, window_right=0)
    assert tb._config("fwd", q, 64, causal, 1024, 1024, tma_possible=True, gluon_possible=True)["GLUON"]
    assert tb._config("fwd", q, 64, _params(), 1024, 1024, tma_possible=True, gluon_possible=True)["GLUON"]
    assert not tb._config("fwd", q, 64, causal, 1024, 1024, tma_possible=True, gluon_possible=False)["GLUON"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"GLUON": false}}')   # asked for: forward.py
    assert not tb._config("fwd", q, 64, causal, 1024, 1024, tma_possible=True, gluon_possible=True)["GLUON"]


def test_gluon_forward_takes_64_keys_on_short_causal_calls(monkeypatch):
    """decisions.fwd_gluon_short_causal (h200-20261201-twentieth call 1): at head dims 33-64, 16-bit,
    right edge at the diagonal, seqlen_k <= 512 and seqlen_q >= seqlen_k; 128 keys elsewhere."""
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")

    def block_n(d=64, sq=512, sk=512, dtype=torch.bfloat16, **kw):
        q = torch.randn(1, 16, 2, d, dtype=dtype)
        return tb._config("fwd", q, d, _params(**kw), sq, sk, tma_possible=True, gluon_possible=True)["BLOCK_N"]

    causal = dict(causal=True, window_right=0)
    assert block_n(**causal) == 64 and block_n(sq=300, sk=300, **causal) == 64
    assert block_n(d=40, **causal) == 64 and block_n(dtype=torch.float16, **causal) == 64
    assert block_n(sq=600, sk=512, **causal) == 64 and block_n(sq=17, sk=1, **causal) == 64
    assert block_n(window_left=100, window_right=0) == 64                 # a window whose right edge is the diagonal
    assert block_n() == 128 and block_n(window_left=100, window_right=5) == 128   # tiles see every block
    assert block_n(sq=1024, sk=1024, **causal) == 128 and block_n(sq=513, sk=513, **causal) == 128
    assert block_n(sq=1, sk=512, **causal) == 128                         # decoding: the tile sees every key
    assert block_n(d=128, **causal) == 128 and block_n(d=96, **causal) == 128
    assert block_n(fp8=True, **causal) == 128                              # fp8: not measured
    assert block_n(**causal) == 64                                        # remembered configs keep the answer apart
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"BLOCK_N": 128}}')   # asked for: as asked
    assert block_n(**causal) == 128


def test_gluon_forward_takes_192_queries_on_long_full_calls(monkeypatch):
    """decisions.fwd_gluon_three_warpgroups (h200-20261202-three-wg calls 1-4): at head dims 17-64,
    16-bit, full attention (no mask or window), not varlen, from 2048 queries and keys, where
    the tiles' rounds over the SMs come out shorter; 128 elsewhere, and never with PINGPONG
    (turns between two warpgroups)."""
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")

    def block_m(d=64, sq=4096, sk=4096, dtype=torch.bfloat16, b=4, h=32, **kw):
        q = torch.randn(b, 16, h, d, dtype=dtype)          # (the rule reads batch and heads; off a GPU 132 SMs)
        return tb._config("fwd", q, d, _params(**kw), sq, sk, tma_possible=True, gluon_possible=True)["BLOCK_M"]

    assert block_m() == 192 and block_m(d=40) == 192 and block_m(dtype=torch.float16) == 192
    assert block_m(sq=2048, sk=2048, b=8) == 192 and block_m(sq=16384, sk=16384, b=1) == 192   # as timed
    assert block_m(causal=True, window_right=0) == 128 and block_m(window_left=100, window_right=100) == 128
    assert block_m(sq=1024, sk=4096) == 128 and block_m(sq=4096, sk=2047) == 128
    assert block_m(d=32) == 192 and block_m(d=17) == 192
    assert block_m(d=128) == 128 and block_m(d=16) == 128 and block_m(d=65) == 128
    assert block_m(fp8=True) == 128                                        # fp8: not measured
    # few tiles: 8 heads of 4096 queries are two rounds of 132 SMs either way, 192's each 1.4 times as long
    assert block_m(b=1, h=8) == 128 and block_m(b=1, h=1, sq=16384, sk=16384) == 128
    assert decisions.fwd_gluon_three_warpgroups(64, False, 4096, 4096, False, False, 8, 132) is False
    assert decisions.fwd_gluon_three_warpgroups(64, False, 4096, 4096, False, False, 8, 30) is True   # (30 SMs)
    cu = torch.tensor([0, 4096], dtype=torch.int32)
    assert block_m(cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=4096, max_seqlen_k=4096) == 128   # varlen
    assert block_m() == 192                                                # remembered configs keep the answer apart
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"PINGPONG": true}}')
    assert block_m() == 128
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"BLOCK_M": 128}}')   # asked for: as asked
    assert block_m() == 128


def test_late_sum_asked_keeps_two_warpgroups(monkeypatch):
    """The three-warpgroup forward (BLOCK_M 192) adds its row sums beside the exponentials: where
    it is the default, it says LATE_SUM off; LATE_SUM asked for keeps the call on two warpgroups
    (as PINGPONG does), and asked for beside BLOCK_M 192 is an error naming both."""
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    q = torch.randn(4, 16, 32, 64, dtype=torch.bfloat16)

    def cfg():
        return tb._config("fwd", q, 64, _params(), 4096, 4096, tma_possible=True, gluon_possible=True)

    assert (cfg()["BLOCK_M"], cfg()["LATE_SUM"]) == (192, False)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"LATE_SUM": true}}')
    assert (cfg()["BLOCK_M"], cfg()["LATE_SUM"]) == (128, True)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"LATE_SUM": false}}')
    assert (cfg()["BLOCK_M"], cfg()["LATE_SUM"]) == (192, False)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"LATE_SUM": true, "BLOCK_M": 192}}')
    with pytest.raises(ValueError, match=r"LATE_SUM is in the two-warpgroup Gluon forward only .*BLOCK_M 192"):
        cfg()


@triton.jit
def _warpgroup_ranges(M0, SQ, SK, WL, WR, OUT, n, ROW0: tl.constexpr, BLOCK_N: tl.constexpr,
                      MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr, BLOCK: tl.constexpr):
    """As the Gluon consumer: the 128-row tile's blocks, then those of its warpgroup from row ROW0."""
    i = tl.arange(0, BLOCK)
    ok = i < n
    # (each load and store written out: compiled for a GPU, a kernel takes no generator or enumerate)
    m0 = tl.load(M0 + i, mask=ok, other=0)
    sq = tl.load(SQ + i, mask=ok, other=0)
    sk = tl.load(SK + i, mask=ok, other=0)
    wl = tl.load(WL + i, mask=ok, other=0)
    wr = tl.load(WR + i, mask=ok, other=0)
    lo, _, _, hi = key_blocks(m0, sq, sk, wl, wr, 128, BLOCK_N, MASK_LEFT, MASK_RIGHT)
    n_blocks = tl.cdiv(tl.maximum(hi - lo, 0), BLOCK_N)
    full_lo, full_hi, n_mine = warpgroup_blocks(m0 + ROW0, lo, n_blocks, sq, sk, wl, wr, 64, BLOCK_N,
                                                MASK_LEFT, MASK_RIGHT)
    tl.store(OUT + i * 5, lo, mask=ok)
    tl.store(OUT + i * 5 + 1, n_blocks, mask=ok)
    tl.store(OUT + i * 5 + 2, full_lo, mask=ok)
    tl.store(OUT + i * 5 + 3, full_hi, mask=ok)
    tl.store(OUT + i * 5 + 4, n_mine, mask=ok)


def warpgroup_ranges(cases, row0, block_n, mask_left, mask_right):
    """_warpgroup_ranges over cases (m0, sq, sk, window_left, window_right): for each, the
    (lo, n_blocks, full_lo, full_hi, n_mine) of the warpgroup from row row0."""
    cols = [torch.tensor(c, dtype=torch.int32, device=DEVICE) for c in zip(*cases)]
    out = torch.full((len(cases), 5), -7, dtype=torch.int32, device=DEVICE)
    _warpgroup_ranges[(1,)](*cols, out, len(cases), row0, block_n, mask_left, mask_right,
                            triton.next_power_of_2(len(cases)))
    return out.tolist()


@pytest.mark.parametrize("block_n", [64, 128])
@pytest.mark.parametrize("mask_left, mask_right", [(False, True), (True, True), (True, False)])
def test_warpgroup_blocks_skip_and_unmask_only_what_they_may(block_n, mask_left, mask_right):
    """common.warpgroup_blocks, by brute force over random lengths and windows: no block a
    warpgroup leaves unread holds a key its rows see; no block it reads unmasked hides one; the
    blocks it reads cover every key its rows see. (The Gluon forward releases the rest unread.)"""
    rng = np.random.default_rng(1000 * block_n + 10 * mask_left + mask_right)
    cases = []
    for _ in range(160):
        sq, sk = (int(x) for x in rng.integers(1, 400, 2))
        wl = int(rng.integers(0, sk)) if mask_left else -1
        wr = int(rng.choice([0, 0, rng.integers(0, sq)])) if mask_right else -1
        cases += [(m0, sq, sk, wl, wr) for m0 in range(0, sq, 128)]
    unread = unmasked = 0
    for row0 in (0, 64):
        ranges = warpgroup_ranges(cases, row0, block_n, mask_left, mask_right)
        for (m0, sq, sk, wl, wr), (lo, n_blocks, full_lo, full_hi, n_mine) in zip(cases, ranges):
            rows = np.arange(m0 + row0, min(m0 + row0 + 64, sq))[:, None]
            if n_blocks == 0 or rows.size == 0:
                continue
            end = lo + n_blocks * block_n
            keys = np.arange(max(end, sk))[None, :]
            diag = rows + sk - sq
            sees = (keys < sk) & ((keys >= diag - wl) | (not mask_left)) & ((keys <= diag + wr) | (not mask_right))
            assert 1 <= n_mine <= n_blocks and lo <= full_lo <= full_hi
            assert not sees[:, :lo].any() and not sees[:, end:].any()
            for jb in range(n_blocks):
                n0 = lo + jb * block_n
                block = sees[:, n0:n0 + block_n]
                if jb >= n_mine:
                    assert not block.any(), (m0, row0, sq, sk, wl, wr, jb)
                    unread += 1
                elif full_lo <= n0 < full_hi:
                    assert block.all() and block.shape[1] == block_n, (m0, row0, sq, sk, wl, wr, jb)
                    unmasked += 1
    assert unmasked > 0 and (unread > 0 or not mask_right)    # the cases reach both branches


@pytest.mark.parametrize("block_n", [128, 64])
def test_diag_first_only_where_the_diagonal_block_alone_is_masked(block_n):
    """decisions.fwd_whole_blocks's DIAG_FIRST lets the Gluon forward stream a tile's blocks last to
    first, and each warpgroup release unread the ones it cannot see (they come first), mask the
    next (its diagonal's) and no other. By brute force over the calls it allows (common.key_blocks
    / warpgroup_blocks, as the consumer runs them): for each warpgroup of every tile that sees
    keys, the blocks past the n_mine it reads hide every key, every block it reads but its last is
    whole to every row, and every row sees a key of that last block (so the first block it
    multiplies, masked, gives each row a max), unless no row sees any key and it is the only one."""
    rng = np.random.default_rng(7)
    cases = []
    for _ in range(60):
        sq, sk = 128 * int(rng.integers(1, 13)), block_n * int(rng.integers(1, 1536 // block_n + 1))
        assert decisions.fwd_whole_blocks(sq, sk, 128, block_n, -1, 0, False, False) == (True, True)
        cases += [(m0, sq, sk, -1, 0) for m0 in range(0, sq, 128)]
    seen = skipped = 0
    for row0 in (0, 64):
        ranges = warpgroup_ranges(cases, row0, block_n, False, True)
        for (m0, sq, sk, _, _), (lo, n_blocks, full_lo, full_hi, n_mine) in zip(cases, ranges):
            if n_blocks == 0:
                continue
            rows = np.arange(m0 + row0, m0 + row0 + 64)[:, None]
            sees = np.arange(sk)[None, :] <= rows + sk - sq
            last = lo + (n_mine - 1) * block_n
            assert 1 <= n_mine <= n_blocks and full_lo <= lo and full_hi >= last, (m0, row0, sq, sk)
            assert not sees[:, lo + n_mine * block_n:].any(), (m0, row0, sq, sk)
            assert sees[:, lo:last].all(), (m0, row0, sq, sk)
            assert sees[:, last:last + block_n].any(1).all() or (n_mine == 1 and not sees.any()), (m0, row0, sq, sk)
            seen += 1
            skipped += n_blocks - n_mine
    assert seen > 100 and (skipped > 0) == (block_n == 64)
    for args in [(1000, 1024, 128, 128, -1, 0, False, False), (1024, 1024, 128, 128, -1, 0, True, False),
                 (1024, 1024, 128, 128, -1, 0, False, True), (1024, 1024, 128, 128, 64, 0, False, False),
                 (1024, 1024, 128, 128, -1, 5, False, False), (1024, 1024, 128, 64, -1, 0, False, False, True),
                 (1024, 1000, 128, 128, -1, 0, False, False), (2048, 2048, 192, 128, -1, -1, False, False)]:
        assert decisions.fwd_whole_blocks(*args)[1] is False, args
    assert decisions.fwd_whole_blocks(1000, 1024, 128, 128, -1, -1, False, True) == (True, False)
    assert decisions.fwd_whole_blocks(1024, 1000, 128, 128, -1, -1, False, False) == (False, False)


def test_gluon_switch_only_on_sm90():
    assert configs.switches("fwd", "cuda:sm90", 128, False)["GLUON"]
    assert configs.switches("fwd", "cuda:sm90", 64, False)["GLUON"]
    assert configs.switches("fwd", "cuda:sm90", 256, False)["GLUON"]         # 16-bit up to d256
    assert not configs.switches("fwd", "cuda:sm90", 512, False)["GLUON"]
    assert not configs.switches("fwd", "cuda:sm90", 32, True)["GLUON"]        # fp8 to d32: forward.py
    assert not configs.switches("fwd", "cuda:sm90", 256, True)["GLUON"]       # and past d128
    for arch in ("cuda:sm80", "cuda:sm100", "hip:gfx942", "interpreter"):
        assert not configs.switches("fwd", arch, 128, False)["GLUON"]


def test_gluon_schedule_switches(monkeypatch):
    """Persistent programs, host-made descriptors and TMA stores of out by default at d128;
    each can be asked for either way (a default switch once overrode what FA_CK_TRITON_CONFIG
    asked)."""
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    q = torch.randn(1, 16, 2, 128, dtype=torch.bfloat16)
    cfg = tb._config("fwd", q, 128, _params(), 4096, 4096, tma_possible=True, gluon_possible=True)
    assert cfg["GLUON"] and cfg["PERSISTENT"] and cfg["HOST_DESC"] and cfg["TMA_STORE"]
    for persistent in (True, False):
        for host in (True, False):
            for store in (True, False):
                monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({"PERSISTENT": persistent, "HOST_DESC": host,
                                                               "TMA_STORE": store}))
                cfg = tb._config("fwd", q, 128, _params(), 4096, 4096, tma_possible=True, gluon_possible=True)
                # TMA stores go through a host-made descriptor: off without one
                assert (cfg["PERSISTENT"], cfg["HOST_DESC"], cfg["TMA_STORE"]) == (persistent, host, store and host)


def test_gluon_tma_store_where_it_fits(monkeypatch):
    """Out by TMA stores by default, where shared memory holds its staging tiles (whole or half
    as wide): not with 3-deep rings of 128 keys at d128 (241 KB with half-width tiles), an
    error when asked for."""
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    q = torch.randn(1, 16, 2, 128, dtype=torch.bfloat16)

    def cfg(d=128, **asked):
        if asked:
            monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": asked}))
        else:
            monkeypatch.delenv("FA_CK_TRITON_CONFIG", raising=False)
        return tb._config("fwd", q, d, _params(), 16384, 16384, tma_possible=True, gluon_possible=True)
    assert cfg()["TMA_STORE"] and cfg(64)["TMA_STORE"]
    assert not cfg(num_stages=3)["TMA_STORE"]                         # 3 x 128 keys: off by default
    assert cfg(num_stages=3, BLOCK_N=64)["TMA_STORE"]
    with pytest.raises(ValueError, match="TMA_STORE needs 246784 bytes of shared memory"):   # (half-width tiles)
        cfg(num_stages=3, TMA_STORE=True)                              # tiles the user chose: an error
    assert not cfg(num_stages=3, TMA_STORE=True, HOST_DESC=False)["TMA_STORE"]   # no TMA store at all
    assert cfg(64, num_stages=3, TMA_STORE=True)["TMA_STORE"]          # d64: 129 KB
    assert configs.fwd_gluon_smem(128, dict(BLOCK_M=128, BLOCK_N=128, num_stages=2, TMA_STORE=True),
                                  torch.bfloat16) == 128 * 128 * 2 * 6 + 1024


def test_gluon_forward_at_head_dims_past_128(monkeypatch):
    """Head dims 129-256 (16-bit): the Gluon forward by default with 64-key blocks, 2-deep rings
    and out's TMA store through tiles half as wide (what shared memory holds: Q 64 KB, the rings
    128 KB, 32 KB for out); every autotune candidate fits; fp8 stays at 128 and below (the Gluon
    backward past 128: test_gluon_backward)."""
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    monkeypatch.delenv("FA_CK_TRITON_CONFIG", raising=False)
    for d in (160, 256):
        q = torch.randn(1, 16, 2, d, dtype=torch.bfloat16)
        cfg = tb._config("fwd", q, d, _params(), 4096, 4096, tma_possible=False, gluon_possible=True)
        assert cfg["GLUON"] and (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_stages"]) == (128, 64, 2)
        assert cfg["TMA_STORE"] and cfg["PERSISTENT"] and cfg["HOST_DESC"]
        assert configs.fwd_gluon_out_cols(d, cfg, torch.bfloat16) == 128        # half of 256
        assert configs.fwd_gluon_smem(d, cfg, torch.bfloat16) == (64 + 128 + 32) * 1024 + 1024 <= \
            configs.SMEM_BYTES_SM90
        cands = configs.candidates("fwd", "cuda:sm90", d, torch.bfloat16, gluon=True)
        assert cfg in [dict(cfg, **c) for c in cands] and len(cands) >= 2
        assert all(configs.fwd_gluon_smem(d, dict(c, TMA_STORE=False), torch.bfloat16) <= configs.SMEM_BYTES_SM90
                   for c in cands)
    q = torch.randn(1, 16, 2, 256, dtype=torch.bfloat16)
    for asked, needs in (({"num_stages": 3}, 263168), ({"BLOCK_N": 128}, 328704),
                         ({"num_stages": 3, "TMA_STORE": True}, 263168)):   # the tiles alone do not fit
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": asked}))
        with pytest.raises(ValueError, match=f"the Gluon forward needs {needs} bytes of shared memory"):
            tb._config("fwd", q, 256, _params(), 4096, 4096, tma_possible=False, gluon_possible=True)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"BLOCK_N": 32, "num_stages": 3}}))
    assert tb._config("fwd", q, 256, _params(), 4096, 4096, tma_possible=False, gluon_possible=True)["GLUON"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"BLOCK_N": 32, "TMA_STORE": True}}))
    assert tb._config("fwd", q, 256, _params(), 4096, 4096, tma_possible=False,
                      gluon_possible=True)["TMA_STORE"]                      # 32-key blocks: room for all of out
    assert configs.fwd_gluon_out_cols(256, dict(BLOCK_M=128, BLOCK_N=32, num_stages=2), torch.bfloat16) == 256
    monkeypatch.delenv("FA_CK_TRITON_CONFIG")
    assert not configs.switches("fwd", "cuda:sm90", 256, fp8=True)["GLUON"]
    assert configs.switches("bwd_dkdv", "cuda:sm90", 256, False)["GLUON"]
    assert configs.switches("bwd_dq", "cuda:sm90", 256, False)["GLUON"]
    # which calls the Gluon launcher takes (its TMA check): 16-bit up to 256, fp8 up to 128
    monkeypatch.setattr(configs, "INTERPRET", False)
    t = torch.randn(1, 64, 2, 256, dtype=torch.bfloat16)
    assert gluon._gluon_ok(t, t, t, t, _params())
    wide = torch.randn(1, 64, 2, 288, dtype=torch.bfloat16)
    assert not gluon._gluon_ok(wide, wide, wide, wide, _params())


def test_gluon_config_and_its_checks(monkeypatch):
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    q = torch.randn(1, 16, 2, 128, dtype=torch.bfloat16)
    p = _params()
    cfg = tb._config("fwd", q, 128, p, 4096, 4096, tma_possible=True, gluon_possible=True)
    assert cfg["GLUON"]
    assert (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"], cfg["num_stages"]) == (128, 128, 4, 2)
    assert not tb._config("fwd", q, 128, p, 4096, 4096, tma_possible=True, gluon_possible=False)["GLUON"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"GLUON": false}}')
    assert not tb._config("fwd", q, 128, p, 4096, 4096, tma_possible=True, gluon_possible=True)["GLUON"]
    for bad in ('{"BLOCK_M": 64}', '{"num_warps": 8}'):     # fixed by the kernel's two warpgroups
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", f'{{"fwd": {bad}}}')
        with pytest.raises(ValueError, match="the Gluon kernel has BLOCK_M 128 and num_warps 4"):
            tb._config("fwd", q, 128, p, 4096, 4096, tma_possible=True, gluon_possible=True)
    # every kernel's tiles are powers of two (integers), asked for or not, Gluon or not
    for kernel in ("fwd", "bwd_dkdv", "bwd_dq"):
        for gluon_possible in (False, True):
            for tile, bad in (("BLOCK_M", 96), ("BLOCK_N", 48), ("BLOCK_N", 0), ("BLOCK_M", 64.0), ("BLOCK_N", "64")):
                monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({kernel: {tile: bad}}))
                with pytest.raises(ValueError, match=rf"\['{kernel}'\]: {tile} must be a power of two \(an integer\), "
                                                     rf"got {bad!r}"):
                    tb._config(kernel, q, 64, p, 4096, 4096, tma_possible=False, gluon_possible=gluon_possible)
    monkeypatch.delenv("FA_CK_TRITON_CONFIG")
    for arch in ("cuda:sm90", "cuda:sm80", "hip:gfx942", "interpreter"):
        for kernel in ("fwd", "bwd_dkdv", "bwd_dq"):
            for d in (16, 64, 128, 256):
                for dtype in (torch.bfloat16, torch.float32):
                    for gl_ in (False, True):
                        for c in [configs.default(kernel, arch, d, dtype, gluon=gl_),
                                  *configs.candidates(kernel, arch, d, dtype, gluon=gl_)]:
                            tiles = ("BLOCK_N",) if (gl_, kernel, c["BLOCK_M"]) == (True, "fwd", 192) else \
                                ("BLOCK_M", "BLOCK_N")        # (the Gluon forward's three warpgroups: 192)
                            assert all(c[t] >= 1 and not c[t] & (c[t] - 1) for t in tiles), c
    # autotune also tries three consumer warpgroups where the Gluon forward has them (16-bit, d17-64)
    for d, dtype, want in ((64, torch.bfloat16, True), (32, torch.float16, True), (16, torch.bfloat16, False),
                           (128, torch.bfloat16, False), (64, torch.float8_e4m3fn, False)):
        got = any(c["BLOCK_M"] == 192 for c in configs.candidates("fwd", "cuda:sm90", d, dtype, gluon=True))
        assert got == want, (d, dtype)
    # 192 queries (three consumer warpgroups): 16-bit head dims up to 64, without PINGPONG; forward.py
    # and the other kernels take powers of two
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"BLOCK_M": 192}}')
    for d in (16, 48, 64):
        assert tb._config("fwd", q, d, p, 4096, 4096, tma_possible=True, gluon_possible=True)["BLOCK_M"] == 192
    with pytest.raises(ValueError, match=r"BLOCK_M 192 \(three consumer warpgroups\) is for 16-bit inputs at head "
                                         r"dims up to 64.*head dim 65"):
        tb._config("fwd", q, 65, p, 4096, 4096, tma_possible=True, gluon_possible=True)
    with pytest.raises(ValueError, match="got fp8 at head dim 64"):
        tb._config("fwd", q, 64, _params(fp8=True), 4096, 4096, tma_possible=True, gluon_possible=True)
    with pytest.raises(ValueError, match=r"\['fwd'\]: BLOCK_M must be a power of two \(an integer\), got 192"):
        tb._config("fwd", q, 64, p, 4096, 4096, tma_possible=True, gluon_possible=False)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dq": {"BLOCK_M": 192}}')
    with pytest.raises(ValueError, match="BLOCK_M must be a power of two"):
        tb._config("bwd_dq", q, 64, p, 4096, 4096, tma_possible=False, gluon_possible=True)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"BLOCK_M": 192, "PINGPONG": true}}')
    with pytest.raises(ValueError, match="PINGPONG takes turns between two warpgroups"):
        tb._config("fwd", q, 64, p, 4096, 4096, tma_possible=True, gluon_possible=True)
    cfg = dict(BLOCK_M=192, BLOCK_N=128, num_stages=2, TMA_STORE=True)   # Q as four 64-row tiles, out as three
    assert configs.fwd_gluon_smem(64, cfg, torch.bfloat16) == 256 * 64 * 2 + 2 * 2 * 128 * 64 * 2 + 192 * 64 * 2 + 1024
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"BLOCK_N": 64, "num_stages": 3}}')
    cfg = tb._config("fwd", q, 128, p, 4096, 4096, tma_possible=True, gluon_possible=True)
    assert (cfg["BLOCK_N"], cfg["num_stages"]) == (64, 3)
    for c in configs.candidates("fwd", "cuda:sm90", 128, torch.bfloat16, gluon=True):
        assert (c["BLOCK_M"], c["num_warps"]) == (128, 4)


# ---------------------------------------------------------------------------- on an sm90 GPU

gpu = pytest.mark.skipif(not SM90 or bool(gluon._GLUON_ERROR), reason="needs an sm90 GPU and Gluon")


# (switches, programs): a program per tile, or PERSISTENT programs (one per SM, or 3, so each
# carries its rings and barriers through many tiles); q, k, v as host-made descriptors, or
# (HOST_DESC false, as for every varlen call) descriptors built per tile on the device; out by
# plain stores or TMA stores (the default); P's row sums a block late (LATE_SUM, the default only
# for fp8 of 16-bit inputs)
SCHEDULES = {"defaults": ({}, None),
             "per-tile": ({"PERSISTENT": False, "TMA_STORE": False}, None),
             "persistent-3": ({"PERSISTENT": True, "TMA_STORE": False}, 3),
             "device-desc": ({"HOST_DESC": False, "PERSISTENT": False}, None),
             "device-desc-persistent-3": ({"HOST_DESC": False, "PERSISTENT": True}, 3),
             "tma-store-persistent-3": ({"TMA_STORE": True, "PERSISTENT": True}, 3),
             "late-sum-persistent-3": ({"LATE_SUM": True, "PERSISTENT": True}, 3)}


@pytest.fixture(params=list(SCHEDULES))
def schedule(request, monkeypatch):
    switches, programs = SCHEDULES[request.param]
    if programs:
        monkeypatch.setattr(gluon, "_sm_count", lambda device: programs)
    return switches


def ask(schedule, **switches):
    """FA_CK_TRITON_CONFIG sending the forward to the Gluon kernel with these switches."""
    return json.dumps({"fwd": {"GLUON": True, **schedule, **switches}})


@pytest.fixture
def gluon_calls(request, monkeypatch, schedule):
    """Sends every call it can serve to the Gluon forward (not only where it is the default), in
    each schedule, and counts the launches: each test asserts its calls went there. Afterwards
    checks that the schedule reached the kernel (its constexprs and grid), not only the config."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule))
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    yield count_calls(monkeypatch, gluon, "_forward_gluon")
    persistent = schedule.get("PERSISTENT", True)
    programs = SCHEDULES[request.node.callspec.params["schedule"]][1]
    for grid, c in launches:
        assert c["PERSISTENT"] == persistent
        assert not c["TMA_STORE"] or c["HOST_DESC"]                  # TMA stores only through host descriptors
        if not c["VARLEN"]:
            assert c["HOST_DESC"] == schedule.get("HOST_DESC", True)
        assert c["FP8"] or not c["P_REGS"]
        if programs:
            assert grid[0] <= programs
    def fits(c):     # out's TMA store (16-bit out) beside Q and the rings (not at head dims past 128)
        return configs.fwd_gluon_smem(c["BLOCK_D"], dict(BLOCK_M=128, BLOCK_N=c["BLOCK_N"], num_stages=c["NUM_BUF"],
                                                         TMA_STORE=True), torch.bfloat16, c["FP8"], 2) \
            <= configs.SMEM_BYTES_SM90
    if schedule.get("TMA_STORE") and schedule.get("HOST_DESC", True) and any(
            not c["VARLEN"] and fits(c) for _, c in launches):
        assert any(c["TMA_STORE"] for _, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [
    (2, 1000, 1000, 8, 8, 128), (1, 4096, 4096, 4, 4, 128), (2, 777, 1531, 4, 2, 64),
    (3, 1531, 129, 6, 3, 96), (2, 1, 300, 4, 1, 128), (1, 300, 1, 2, 2, 64), (2, 260, 260, 2, 2, 32),
    (1, 130, 257, 2, 1, 16), (2, 1000, 1000, 8, 8, 256), (3, 1531, 129, 6, 3, 192), (1, 300, 777, 2, 1, 160),
    (2, 517, 600, 4, 2, 136), (1, 1000, 333, 2, 2, 200),
])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_forward_matches_reference(gluon_calls, dtype, shape, causal):
    check(*shape, dtype=dtype, device="cuda", causal=causal)
    assert gluon_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [2, 3])
@pytest.mark.parametrize("block_n", [128, 64])
def test_gluon_forward_every_candidate(gluon_calls, schedule, monkeypatch, num_stages, block_n):
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule, BLOCK_N=block_n, num_stages=num_stages))
    cfg = dict(BLOCK_M=128, BLOCK_N=block_n, num_stages=num_stages, **schedule)
    if configs.fwd_gluon_smem(128, cfg, torch.bfloat16) > configs.SMEM_BYTES_SM90:   # TMA_STORE asked, 3 x 128 keys
        with pytest.raises(ValueError, match="TMA_STORE needs"):
            check(2, 1111, 1500, 4, 2, 128, dtype=torch.bfloat16, device="cuda", causal=True, grads=False)
    else:
        check(2, 1111, 1500, 4, 2, 128, dtype=torch.bfloat16, device="cuda", causal=True, grads=False)
    assert configs.fwd_gluon_smem(64, cfg, torch.bfloat16) <= configs.SMEM_BYTES_SM90   # every candidate fits at d64
    check(1, 700, 640, 2, 2, 64, dtype=torch.bfloat16, device="cuda", grads=False)
    assert gluon_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape, window", [((4, 512, 512, 4, 2, 64), (-1, 0)), ((2, 300, 300, 4, 4, 48), (-1, 0)),
                                           ((2, 600, 511, 2, 1, 64), (100, 0)), ((3, 77, 1, 2, 2, 64), (-1, 0))])
def test_gluon_forward_short_causal_takes_64_keys(monkeypatch, shape, window):
    """By default (decisions.fwd_gluon_short_causal), and right."""
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    check(*shape, dtype=torch.bfloat16, device="cuda", window_size=window)
    assert launches and all(c["BLOCK_N"] == 64 for _, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 1000, 1000, 4, 4, 64), (1, 576, 576, 2, 2, 64), (2, 777, 1531, 4, 2, 48),
                                   (1, 1, 300, 2, 1, 64), (2, 300, 1, 2, 2, 32), (1, 193, 257, 2, 1, 16)])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_forward_three_warpgroups(gluon_calls, schedule, monkeypatch, shape, causal):
    """BLOCK_M 192 (asked for): three consumer warpgroups of 64 queries, Q loaded as three boxes,
    every K / V buffer released by all three, in every schedule; tiles that end past the
    sequence, ones whose later warpgroups see no query, windows and varlen."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule, BLOCK_M=192))
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    if schedule.get("LATE_SUM"):          # (a two-warpgroup switch: refused beside BLOCK_M 192, before any launch)
        with pytest.raises(ValueError, match="LATE_SUM is in the two-warpgroup Gluon forward only"):
            check(*shape, dtype=torch.bfloat16, device="cuda", causal=causal, grads=False)
        assert not launches
        return
    check(*shape, dtype=torch.bfloat16, device="cuda", causal=causal, grads=False)
    if causal:
        check(2, 900, 1100, 4, 2, 64, dtype=torch.float16, device="cuda", window_size=(200, 37), grads=False)
        check_varlen([5, 1, 0, 300, 193, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 4, 4, 64, dtype=torch.bfloat16,
                     device="cuda", causal=True, grads=False)
    assert gluon_calls and launches and all(c["BLOCK_M"] == 192 for _, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(2, 2100, 2300, 4, 2, 64), (2, 2048, 2048, 12, 12, 40)])
def test_gluon_forward_192_queries_by_default(monkeypatch, dtype, shape):
    """decisions.fwd_gluon_three_warpgroups's calls take 192 queries without asking, and their out,
    lse and the gradients through them match float64."""
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    check(*shape, dtype=dtype, device="cuda")
    assert launches and all(c["BLOCK_M"] == 192 for _, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape, even, diag_first", [
    ((2, 1000, 1024, 4, 2, 128), True, False), ((1, 4096, 512, 4, 4, 64), True, True),
    ((4, 512, 512, 4, 2, 64), True, True), ((2, 384, 640, 2, 2, 256), True, True),
    ((2, 2048, 2048, 12, 12, 64), True, True), ((2, 300, 640, 2, 2, 256), True, False),
    ((1, 512, 1024, 2, 2, 128), True, True), ((2, 1024, 512, 2, 1, 128), True, True),
    ((2, 1024, 1000, 4, 4, 64), False, False), ((1, 512, 576, 2, 1, 128), False, False),
])
def test_gluon_forward_even_keys(gluon_calls, schedule, monkeypatch, shape, even, diag_first):
    """Keys a whole number of blocks (EVEN_N, not varlen): full attention compiles no masked
    softmax (any query count, 128 or 192 queries per tile, 64-key blocks past d128, GQA); causal
    calls with whole 128-query blocks too stream the diagonal's block first (DIAG_FIRST: more
    keys than queries, fewer, and rows that see no key; 128-key blocks, and 64-key ones, short
    causal d64 and past d128, where a warpgroup first releases the block it cannot see), others
    keep the per-block mask."""
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    check(*shape, dtype=torch.bfloat16, device="cuda", grads=False)
    assert launches and all(c["EVEN_N"] == even and not c["DIAG_FIRST"] for _, c in launches)
    assert all(shape[2] % c["BLOCK_N"] == 0 for _, c in launches) == even
    del launches[:]
    check(*shape, dtype=torch.float16, device="cuda", causal=True, grads=False)
    assert launches and all(c["EVEN_N"] == even and c["DIAG_FIRST"] == diag_first for _, c in launches)
    assert gluon_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("window", [(64, 0), (200, 37), (-1, 100), (5, -1), (0, 0)])
def test_gluon_forward_windows(gluon_calls, window):
    check(2, 900, 1100, 4, 2, 128, dtype=torch.bfloat16, device="cuda", window_size=window)
    assert gluon_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_forward_varlen(gluon_calls, causal):
    lens_q = [5, 1, 0, 300, 129, 1000, 2]
    lens_k = [1, 0, 3, 300, 700, 1000, 130]
    check_varlen(lens_q, lens_k, 8, 2, 128, dtype=torch.bfloat16, device="cuda", causal=causal)
    check_varlen(lens_q, lens_k, 4, 4, 64, dtype=torch.float16, device="cuda", causal=causal,
                 window_size=(100, 0) if causal else (-1, -1))
    assert gluon_calls


@gpu
@pytest.mark.gpu
def test_gluon_forward_graph_capture(gluon_calls):
    q, k, v = (torch.randn(2, 512, 4, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    eager = fa_ck.flash_attn_func(q, k, v, causal=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = fa_ck.flash_attn_func(q, k, v, causal=True)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, eager)                     # the same kernel, bit for bit
    assert gluon_calls


@gpu
@pytest.mark.gpu
def test_gluon_forward_past_2_31_elements(gluon_calls):
    # q and out have 2^31 + 2^16 elements: the rows of the last programs pass 32-bit offsets.
    from attn_check import FWD_TOL, assert_close
    from fa_ck import reference
    sq, h, d, sk = (1 << 21) + 64, 8, 128, 256
    q = torch.randn(1, sq, h, d, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(1, sk, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    out = fa_ck.flash_attn_func(q, k, v)
    tail = slice(sq - 200, sq)
    ref, _ = reference.attention(q[:, tail].double(), k.double(), v.double(), dtype=torch.float64)
    assert_close("out tail", out[:, tail], ref, FWD_TOL[torch.bfloat16])
    assert gluon_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("case", [
    dict(shape=(2, 1000, 1000, 8, 8, 128), causal=True), dict(shape=(1, 4096, 4096, 4, 4, 128)),
    dict(shape=(2, 1, 300, 4, 1, 128)), dict(shape=(1, 300, 1, 2, 2, 64), causal=True),
    dict(shape=(3, 1531, 129, 6, 3, 96), window_size=(200, 37)), dict(shape=(2, 130, 257, 2, 1, 16)),
])
def test_gluon_forward_pingpong(gluon_calls, schedule, monkeypatch, case):
    # the warpgroups' turn-taking: any miscount of turns deadlocks or races (0, 1, 2+ key blocks,
    # and persistent programs carry the count from tile to tile)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule, PINGPONG=True))
    case = dict(case)
    check(*case.pop("shape"), dtype=torch.bfloat16, device="cuda", **case)
    check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 4, 2, 128, dtype=torch.float16,
                 device="cuda", causal=True, grads=False)
    assert gluon_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [
    (2, 1024, 1024, 4, 2, 128), (1, 2000, 2048, 2, 2, 64), (2, 777, 1536, 4, 4, 96), (1, 1, 512, 2, 1, 128),
    (1, 300, 16, 2, 2, 64), (2, 130, 256, 2, 1, 32), (1, 333, 1001, 2, 1, 128), (1, 300, 300, 2, 1, 48),
])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("p_regs", [True, False])
def test_gluon_fp8_forward(gluon_calls, schedule, monkeypatch, shape, causal, p_regs):
    """The fp8 forward in Gluon (asked for): against the float64 reference (fp8's own error) and
    against the torch emulation of the fp8 scheme with the kernel's 128-key blocks; P in
    registers (v's keys reordered for it) or staged through shared memory."""
    from test_fp8 import EMU_BOUND, EMU_LSE_BOUND, F16_EMU_BOUND, FWD_BOUND, emulate, quantize_as_launched
    from attn_check import assert_close
    from fa_ck import reference
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule, P_REGS=p_regs))
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    b, sq, sk, hq, hkv, d = shape
    q = torch.randn(b, sq, hq, d, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(b, sk, hkv, d, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    out, lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
    assert gluon_calls and launches and all(c["P_REGS"] == p_regs for _, c in launches)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, dtype=torch.float64)
    assert_close("out vs float64", out, ref, FWD_BOUND)
    ((q8, qd), (k8, kd), (v8, vd)), f16 = quantize_as_launched(q, k, v, launches)
    # (causal calls in whole tiles stream each tile's diagonal block first: FP8_DIAG_FIRST)
    last_first = any(c["DIAG_FIRST"] for _, c in launches)
    assert last_first == (causal and sq % 128 == 0 and sk % 128 == 0)
    # (F16_SCORES by default where no block past a warpgroup's first is masked, P in registers)
    assert f16 == (p_regs and sk % 128 == 0 and (not causal or last_first))
    # (the kernel's key blocks: 256 keys on full calls in whole 256-key blocks with F16_SCORES)
    block_n, = {c["BLOCK_N"] for _, c in launches}
    assert block_n == (256 if f16 and not causal and sk % 256 == 0 and (d <= 64 or sk >= 2048) else 128)
    emu, emu_lse, _ = emulate(q8, k8, v8, qd, kd, vd, causal=causal, block_n=block_n, last_first=last_first,
                              s_f16=f16)
    # with a handful of rows the statistic spreads: at one query row both fp8 kernels (this and
    # forward.py's) reached 0.0074-0.0077 over ten seeds, median 0.004 (h200-20261130-bwd call 10)
    few_rows = b * sq * hq < 16
    bound = F16_EMU_BOUND if f16 else EMU_BOUND[torch.bfloat16]
    assert_close("out vs fp8 emulation", out, emu, bound * (2 if few_rows else 1))
    assert_close("lse vs fp8 emulation", lse, emu_lse, EMU_LSE_BOUND)


def test_fp8_streams_the_diagonal_first_only_with_its_switch():
    """DIAG_FIRST for fp8 (its P rounds against the running max, so the order shows in the output)
    only with FP8_DIAG_FIRST, on by default for fp8 calls (measured faster); 16-bit causal calls
    take it without the switch."""
    from fa_ck.backends.triton import configs
    whole = dict(sq=1024, sk=1024, bm=128, bn=128, window_left=-1, window_right=0, varlen=False)
    assert decisions.fwd_whole_blocks(**whole, fp8=False) == (True, True)
    assert decisions.fwd_whole_blocks(**whole, fp8=True) == (True, False)
    assert decisions.fwd_whole_blocks(**whole, fp8=True, fp8_diag_first=True) == (True, True)
    assert decisions.fwd_whole_blocks(**dict(whole, sq=1000), fp8=True, fp8_diag_first=True) == (True, False)
    assert configs.switches("fwd", "cuda:sm90", 128, True)["FP8_DIAG_FIRST"] is True
    assert "FP8_DIAG_FIRST" not in configs.switches("fwd", "cuda:sm90", 128, False)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 1024, 1024, 4, 2, 128), (1, 512, 512, 2, 2, 64), (1, 384, 384, 4, 1, 96),
                                   (1, 256, 256, 2, 1, 128)])
@pytest.mark.parametrize("late_sum", [True, False])
@pytest.mark.parametrize("p_regs", [True, False])
def test_gluon_fp8_forward_diagonal_first(monkeypatch, shape, late_sum, p_regs):
    """FP8_DIAG_FIRST (the default, asked for here): causal fp8 calls in whole 128-row tiles
    stream each tile's diagonal block first; against float64 and against the emulation walking
    the blocks last to first, with and without LATE_SUM, P in registers or staged."""
    from test_fp8 import EMU_BOUND, EMU_LSE_BOUND, F16_EMU_BOUND, FWD_BOUND, emulate, quantize_as_launched
    from attn_check import assert_close
    from fa_ck import reference
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"GLUON": True, "FP8_DIAG_FIRST": True,
                                                                  "LATE_SUM": late_sum, "P_REGS": p_regs}}))
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    b, sq, sk, hq, hkv, d = shape
    q = torch.randn(b, sq, hq, d, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(b, sk, hkv, d, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    out, lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=True, return_lse=True, backend="triton")
    assert launches and all(c["DIAG_FIRST"] and c["LATE_SUM"] == late_sum and c["P_REGS"] == p_regs
                            for _, c in launches)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=True, dtype=torch.float64)
    assert_close("out vs float64", out, ref, FWD_BOUND)
    ((q8, qd), (k8, kd), (v8, vd)), f16 = quantize_as_launched(q, k, v, launches)
    assert f16 == (late_sum and p_regs)      # (F16_SCORES, the default, where the loop can take it)
    assert all(c["BLOCK_N"] == 128 for _, c in launches)        # (causal calls: 128-key blocks)
    emu, emu_lse, _ = emulate(q8, k8, v8, qd, kd, vd, causal=True, block_n=128, last_first=True, s_f16=f16)
    assert_close("out vs fp8 emulation", out, emu, F16_EMU_BOUND if f16 else EMU_BOUND[torch.bfloat16])
    assert_close("lse vs fp8 emulation", lse, emu_lse, EMU_LSE_BOUND)


def test_f16_scores_are_the_fp8_default_checked_and_taken_where_the_loop_has_no_mask(monkeypatch):
    """F16_SCORES with EXP2_POLY 4: the fp8 forward's default (no 16-bit call's switch); F16_SCORES
    off drops the default's polynomial; EXP2_POLY 0, 2 or 4 and only with F16_SCORES (the errors
    name them; a 16-bit call checks the value and drops it); F16_SCORES taken only on fa_ck's own
    quantisation with q rounded in the kernel, P in registers, late row sums, 128 queries, a
    positive scale without softcap or ALiBi, and no masked block past a warpgroup's first."""
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    q = torch.randn(1, 16, 2, 128, dtype=torch.bfloat16)

    def config(fp8=True):
        return tb._config("fwd", q, 128, _params(fp8=fp8), 4096, 4096, tma_possible=True, gluon_possible=True)
    cfg = config(fp8=False)
    assert cfg["GLUON"] and "F16_SCORES" not in cfg and "EXP2_POLY" not in cfg
    for bad, match in ((3, "EXP2_POLY .* 0 \\(none\\), 2 or 4, got 3"), (2.0, "got 2.0"), (True, "got True")):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"EXP2_POLY": bad}}))
        with pytest.raises(ValueError, match=match):
            config()
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"F16_SCORES": False, "EXP2_POLY": 4}}))
    with pytest.raises(ValueError, match="EXP2_POLY works on F16_SCORES' f16 scores .* drop EXP2_POLY"):
        config()
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"EXP2_POLY": 3}}))
    with pytest.raises(ValueError, match="got 3"):          # (a 16-bit call checks it too)
        config(fp8=False)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"EXP2_POLY": 2}}))
    assert "EXP2_POLY" not in config(fp8=False)              # (then drops it: no f16 scores there)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"F16_SCORES": False}}))
    assert not config()["F16_SCORES"] and not config().get("EXP2_POLY")
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"EXP2_POLY": 2}}))
    assert config()["F16_SCORES"] and config()["EXP2_POLY"] == 2
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"num_stages": 3}}))
    assert config()["BLOCK_N"] == 128                # (3-deep rings of 256 keys do not fit at d128)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"BLOCK_N": 128}}))
    assert config()["BLOCK_N"] == 128
    monkeypatch.delenv("FA_CK_TRITON_CONFIG")
    cfg = config()
    assert cfg["F16_SCORES"] and cfg["EXP2_POLY"] == 4 and cfg["P_REGS"] and cfg["LATE_SUM"]
    # 256 keys per block on full calls in whole 256-key blocks, where the scores are f16
    assert cfg["BLOCK_N"] == 256
    wide = decisions.fwd_fp8_wide_blocks
    causal = _params(fp8=True, window_left=-1, window_right=0)
    assert wide(cfg, True, 128, 4096, _params(fp8=True)) and wide(cfg, True, 128, 2048, _params(fp8=True))
    assert not wide(cfg, True, 128, 1024, _params(fp8=True)) and wide(cfg, True, 64, 1024, _params(fp8=True))
    assert not wide(cfg, True, 128, 1536, _params(fp8=True))                     # (not measured between 1k and 2k)
    assert not wide(cfg, True, 128, 4096, AttnParams(scale=-0.125, fp8=True))    # (no raw max, so f32 scores)
    assert not wide(cfg, False, 128, 4096, _params(fp8=True))             # a caller's fp8, or q8
    assert not wide(cfg, True, 128, 4096 - 128, _params(fp8=True))        # keys past whole 256-key blocks
    assert not wide(cfg, True, 128, 4096, causal) and not wide(cfg, True, 64, 4096, causal)
    assert not wide(dict(cfg, LATE_SUM=False), True, 128, 4096, _params(fp8=True))   # (scores then f32)
    assert not wide(cfg, True, 128, 4096, _params(fp8=True, window_left=256, window_right=256))
    assert not wide(cfg, True, 128, 4096, _params(fp8=True, softcap=30.0))
    assert not wide(dict(cfg, F16_SCORES=False), True, 128, 4096, _params(fp8=True))
    assert not wide(cfg, True, 128, 4096, _params(fp8=False))
    assert config(fp8=False)["BLOCK_N"] == 128
    # the remembered configs tell a negative scale's call (f32 scores, 128 keys) from a positive one's
    neg = tb._config("fwd", q, 128, AttnParams(scale=-0.125, fp8=True), 4096, 4096, tma_possible=True,
                     gluon_possible=True)
    assert neg["BLOCK_N"] == 128 and config()["BLOCK_N"] == 256
    cfg = dict(cfg, BLOCK_N=128)      # (causal calls' blocks)
    f16 = decisions.fwd_f16_scores
    assert f16(cfg, True, 4096, 4096, _params(fp8=True))                              # whole blocks
    assert f16(cfg, True, 4096, 4096, _params(fp8=True, window_left=-1, window_right=0))   # the diagonal first
    assert not f16(cfg, False, 4096, 4096, _params(fp8=True))                         # a caller's fp8, or q8
    assert not f16(cfg, True, 4000, 4000, _params(fp8=True, window_left=-1, window_right=0))   # masks per block
    assert not f16(cfg, True, 4096, 4000, _params(fp8=True))                          # keys past whole blocks
    assert not f16(cfg, True, 4096, 4096, _params(fp8=True, window_left=256, window_right=256))
    assert not f16(cfg, True, 4096, 4096, _params(fp8=True, softcap=30.0))
    assert not f16(dict(cfg, F16_SCORES=False), True, 4096, 4096, _params(fp8=True))
    assert not f16(dict(cfg, LATE_SUM=False), True, 4096, 4096, _params(fp8=True))
    assert not f16(dict(cfg, P_REGS=False), True, 4096, 4096, _params(fp8=True))


def test_autotune_searches_the_calls_own_tiles_too(monkeypatch, tmp_path):
    """With autotune on, the tiles the call would take without it (256-key blocks on a full fp8
    call, which configs.candidates does not list) are among those searched, timed as launched
    (F16_WIDE on them), so the search can keep them; the pick then gets that call's switches.
    Calls of the same length bucket whose own tiles differ (2176 keys: no whole 256-key blocks,
    so no f16 scores on them) are searched apart and never get the other's 256-key pick; a
    causal call's own tiles are among the candidates already (none searched twice)."""
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    monkeypatch.setenv("FA_CK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FA_CK_AUTOTUNE", "1")
    q = torch.randn(1, 16, 2, 128, dtype=torch.bfloat16)
    searched = []

    def bench(cfg):           # (milliseconds: the 256-key blocks fastest)
        searched.append(cfg)
        return 1.0 if cfg["BLOCK_N"] == 256 else 2.0

    def config(sk, **kw):
        searched.clear()
        return tb._config("fwd", q, 128, _params(fp8=True, **kw), sk, sk, tma_possible=True, gluon_possible=True,
                          bench=bench)
    cfg = config(4096)
    assert [c["BLOCK_N"] for c in searched].count(256) == 1 and len(searched) > 1
    assert all(c["F16_WIDE"] == (c["BLOCK_N"] == 256) for c in searched)      # (as launched)
    assert cfg["BLOCK_N"] == 256 and cfg["F16_WIDE"] is True and cfg["F16_SCORES"]
    cfg = config(2176)
    assert searched and 256 not in [c["BLOCK_N"] for c in searched] and cfg["BLOCK_N"] != 256
    cfg = config(4096, window_left=-1, window_right=0)
    assert len(searched) == len({tuple(sorted(c.items())) for c in searched}) > 1
    assert 256 not in [c["BLOCK_N"] for c in searched] and cfg["F16_WIDE"] is False
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"F16_WIDE": True}}))
    cfg = config(4096, window_left=-1, window_right=0)          # (asked: searched anew, timed so)
    assert searched and all(c["F16_WIDE"] for c in searched) and cfg["F16_WIDE"] is True


def test_f16_wide_step_on_every_tile_of_256_key_blocks_and_where_asked(monkeypatch):
    """F16_WIDE (the wide f16 step on every tile, the one-fma step and its guard not compiled): by
    default on 256-key blocks past d64 (full fp8 calls), not at d64, not on 128-key blocks (causal,
    or BLOCK_N asked), nor where the scores are f32; asked true or false it is taken as asked
    (16-bit calls drop it); anything but a bool, or true with F16_SCORES asked off, is an error
    naming it. Launched only with f16 scores."""
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    q = torch.randn(1, 16, 2, 128, dtype=torch.bfloat16)

    def config(causal=False, fp8=True):
        p = _params(fp8=fp8, window_left=-1, window_right=0) if causal else _params(fp8=fp8)
        return tb._config("fwd", q, 128, p, 4096, 4096, tma_possible=True, gluon_possible=True)
    cfg = config()
    assert cfg["BLOCK_N"] == 256 and cfg["F16_SCORES"] and cfg["F16_WIDE"] is True
    assert config(causal=True)["BLOCK_N"] == 128 and config(causal=True)["F16_WIDE"] is False
    assert "F16_WIDE" not in config(fp8=False)
    d64 = tb._config("fwd", q[..., :64], 64, _params(fp8=True), 4096, 4096, tma_possible=True, gluon_possible=True)
    assert d64["BLOCK_N"] == 256 and d64["F16_WIDE"] is False
    for asked, full, causal in (({"BLOCK_N": 128}, False, False), ({"F16_WIDE": False}, False, False),
                                ({"F16_WIDE": True}, True, True)):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": asked}))
        assert (config()["F16_WIDE"], config(causal=True)["F16_WIDE"]) == (full, causal), asked
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"F16_SCORES": False}}))
    assert not config().get("F16_WIDE")
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"F16_WIDE": True}}))
    assert "F16_WIDE" not in config(fp8=False)        # (16-bit calls have no f16 scores: dropped there)
    for bad in ({"F16_WIDE": 1}, {"F16_WIDE": "yes"}, {"F16_WIDE": True, "F16_SCORES": False}):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": bad}))
        with pytest.raises(ValueError, match="F16_WIDE"):
            config()


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape,causal", [((2, 1024, 1024, 4, 2, 128), False), ((2, 1024, 1024, 4, 2, 128), True),
                                          ((1, 512, 1536, 4, 4, 64), False), ((1, 384, 384, 4, 1, 96), True),
                                          ((1, 1000, 1000, 2, 2, 128), True), ((1, 256, 256, 2, 2, 128), False)])
@pytest.mark.parametrize("poly", [0, 2, 4])
def test_gluon_fp8_f16_scores(monkeypatch, shape, causal, poly):
    """F16_SCORES with 0, 1 in 2 or 1 in 4 (the default) exponentials by a polynomial (EXP2_POLY):
    against float64 (fp8's error) and against the float64 emulation of its quantisation (q and k
    to 16), where taken (not at 1000 keys: the mask there is decided per block)."""
    from test_fp8 import EMU_LSE_BOUND, F16_EMU_BOUND, FWD_BOUND, emulate
    from attn_check import assert_close
    from fa_ck import reference
    asked = {} if poly == 4 else {"EXP2_POLY": poly}
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"GLUON": True, **asked}}))
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    b, sq, sk, hq, hkv, d = shape
    q = torch.randn(b, sq, hq, d, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(b, sk, hkv, d, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    out, lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
    (_, c), = launches
    taken = sk % 128 == 0 and (not causal or sq % 128 == 0)
    assert c["F16_SCORES"] == taken and c["EXP2_POLY"] == (poly if taken else 0)
    assert c["QK_MAX"] == (configs.F16_SCORES_QK_MAX if taken else 448.0)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, dtype=torch.float64)
    assert_close("out vs float64", out, ref, FWD_BOUND)
    qk_max = configs.F16_SCORES_QK_MAX if taken else 0.0
    (q8, qd), (k8, kd) = (tb.quantize_fp8(t, torch.float8_e4m3fn, target_max=qk_max) for t in (q, k))
    v8, vd = tb.quantize_fp8(v, torch.float8_e4m3fn)
    assert c["BLOCK_N"] == (256 if taken and not causal and sk % 256 == 0 and (d <= 64 or sk >= 2048) else 128)
    emu, emu_lse, _ = emulate(q8, k8, v8, qd, kd, vd, causal=causal, block_n=c["BLOCK_N"], last_first=c["DIAG_FIRST"],
                              s_f16=taken)
    assert_close("out vs fp8 emulation", out, emu, F16_EMU_BOUND)
    assert_close("lse vs fp8 emulation", lse, emu_lse, EMU_LSE_BOUND)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_fp8_f16_scores_sharp_heads_and_heads_past_f16(monkeypatch, causal):
    """F16_SCORES (the default here) per head: N(0, 1) scores, scores of standard deviation 4, a
    head whose q and k are one tensor times 100, each query's own key ahead of the rest by ~10^5
    nats (in log2 units past f16's 65504, and its scale past softmax_f16.F16_SCORE_LIMIT), and
    two heads with an outlier channel in q and k, 20 and 60 times U(0.5, 1) (row maxes ~40 and
    ~350 log2 units; the first under the guard's limit, the second past it). Causal calls (128-key
    blocks) take the one-fma step where the guard lets them, the wide step past it (with the one
    fma per pair the one-hot head's blocks after the first gave P = 0); full calls (256-key
    blocks) the wide step on every tile. Against the float64 reference (N(0, 1), and the one-hot
    head: v's own row, to v's rounding; the outlier heads' fp8 error is 30-90 %, e4m3's rounding of
    the outlier channel) and the emulation of the quantisation to 16 with f16 raw scores, each
    element moved by up to its slack (P within F16_NEAR_EDGE of an e4m3 rounding edge). The
    outlier heads stray from that emulation by 1-17 % as their row max grows (40 -> 350 log2 units;
    the guard's one-fma step and the wide step alike: bench/results/h200-20261204-wide call 3), not
    explained by rounding the sums to f16 (which fits worse); their error against float64, 30-90 %,
    is the emulation's own (e4m3's rounding of the outlier channel): they are held to that, within
    5 % of it (measured within 0.4 %, h200-20261204-wide call 4), and their lse to the emulation's."""
    from test_fp8 import EMU_LSE_BOUND, F16_EMU_BOUND, F16_NEAR_EDGE, FWD_BOUND, emulate, quantize_as_launched
    from attn_check import assert_close, rel_err
    from fa_ck import reference
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    q, k, v = (torch.randn(1, 2048, 5, 128, device="cuda") for _ in range(3))
    q[:, :, 1] *= 4
    q[:, :, 2] *= 100
    k[:, :, 2] = q[:, :, 2]
    for h, big in ((3, 20.0), (4, 60.0)):
        q[0, :, h, 0], k[0, :, h, 0] = (big * (0.5 + 0.5 * torch.rand(2048, device="cuda")) for _ in range(2))
    q, k, v = (t.to(torch.bfloat16) for t in (q, k, v))
    out, lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
    ((q8, qd), (k8, kd), (v8, vd)), f16 = quantize_as_launched(q, k, v, launches)
    assert f16
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, dtype=torch.float64)
    assert_close("out vs float64 (N(0, 1) head)", out[:, :, 0], ref[:, :, 0], FWD_BOUND)
    assert_close("out vs float64 (head past f16)", out[:, :, 2], ref[:, :, 2], FWD_BOUND)
    (_, c), = launches
    assert c["BLOCK_N"] == (128 if causal else 256) and c["F16_WIDE"] == (not causal)
    emu, emu_lse, slack = emulate(q8, k8, v8, qd, kd, vd, causal=causal, block_n=c["BLOCK_N"], last_first=causal,
                                  s_f16=True, near_edge=F16_NEAR_EDGE)
    nearest = emu + (out.double() - emu).clamp(-slack, slack)   # each element moved by up to its slack
    for h in range(q.shape[2]):
        assert_close(f"lse vs fp8 emulation (head {h})", lse[:, h], emu_lse[:, h], EMU_LSE_BOUND)
        if h < 3:
            assert_close(f"out vs fp8 emulation (head {h})", out[:, :, h], nearest[:, :, h], F16_EMU_BOUND)
        else:       # (the outlier heads: no further from float64 than the emulation, give or take)
            err, emu_err = rel_err(out[:, :, h], ref[:, :, h]), rel_err(emu[:, :, h], ref[:, :, h])
            assert 0.2 < emu_err and err <= 1.05 * emu_err, (h, err, emu_err)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 1024, 1024, 4, 2, 128), (1, 333, 1001, 2, 1, 64), (2, 777, 1536, 4, 4, 96),
                                   (1, 300, 300, 2, 1, 48), (1, 1, 512, 2, 1, 128)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("schedule", ["defaults", "device-desc", "persistent-3", "device-desc-persistent-3"],
                         indirect=True)
def test_gluon_fp8_q_converted_in_the_kernel_bit_for_bit(monkeypatch, shape, causal, schedule):
    """Q_CONVERT (the default for 16-bit inputs) rounds q inside the kernel from its amax bits, as
    quantize_kernel does: out and lse are bit for bit those of q8 written by the quantisation
    launch, with Q as host-made descriptors or built on the device (as for varlen), a program per
    tile or three programs that each convert many tiles' Q into the same buffers. q is spread so
    that some of it rounds into e4m3's subnormals and one head is all zeros (its scale from 1e-12).
    F16_SCORES off in both (it is taken with Q_CONVERT only; test_gluon_fp8_f16_scores holds its q
    and k at 16 to their emulation)."""
    b, sq, sk, hq, hkv, d = shape
    q = (torch.randn(b, sq, hq, d, device="cuda") * torch.logspace(-3, 1, d, device="cuda")).to(torch.bfloat16)
    q[:, :, -1] = 0
    k, v = (torch.randn(b, sk, hkv, d, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    results = []
    for convert in (True, False):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule, Q_CONVERT=convert, F16_SCORES=False))
        results.append(fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton"))
    assert [c["Q_CONVERT"] for _, c in launches] == [True, False]
    assert [c["Q16_EARLY"] for _, c in launches] == [True, False]     # (by default on 128-key blocks)
    assert not any(c["F16_SCORES"] for _, c in launches)
    assert all(c["HOST_DESC"] == schedule.get("HOST_DESC", True) for _, c in launches)
    assert all(c["PERSISTENT"] == schedule.get("PERSISTENT", c["PERSISTENT"]) for _, c in launches)
    (out, lse), (out8, lse8) = results
    assert torch.isfinite(out).all() and torch.equal(out, out8) and torch.equal(lse, lse8)


@gpu
@pytest.mark.gpu
def test_gluon_fp8_forward_makes_no_q8_where_it_rounds_q(monkeypatch):
    """Q_CONVERT: an fp8 forward of 16-bit inputs allocates out, lse, k8, v8 and the scales, but no
    fp8 copy of q (q.numel() bytes more at its peak), on its slow path and on a replay; with
    Q_CONVERT off it makes q8 on both."""
    b, s, h, d = 4, 4096, 8, 128
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    without_q8 = 2 * q.numel() + 4 * b * h * s + k.numel() + v.numel()      # out, lse, k8, v8 (whole key groups)
    slack = 4 << 20                                                          # the scales, allocator rounding
    monkeypatch.setenv("FA_CK_POISON", "0")      # (poisoned outputs have guards and are cloned)
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    for convert in (True, False):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"Q_CONVERT": convert}}))
        for _ in range(2):                                                   # the slow path, then a replay
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            out = fa_ck.flash_attn_fp8_func(q, k, v, backend="triton")
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
            del out
            least = without_q8 + (0 if convert else q.numel())
            assert least <= peak <= least + slack, (convert, peak, least)
    assert [c["Q_CONVERT"] for _, c in launches] == [True, True, False, False]

@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("block_n,window", [(64, None), (128, (200, 37)), (64, (100, 0))])
def test_gluon_fp8_p_in_registers_other_blocks_and_windows(monkeypatch, block_n, window):
    """P in registers at 64-key blocks (an autotune candidate) and under sliding windows (key
    blocks starting past key 0, 1001 keys: a padded last group): the numbers of P staged but for
    the order P V sums in, and within fp8's bound of float64."""
    from test_fp8 import FWD_BOUND
    from attn_check import assert_close, rel_err
    from fa_ck import reference
    q = torch.randn(2, 700, 4, 128, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(2, 1001, 2, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    mask = dict(window_size=window) if window else dict(causal=True)
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    outs = []
    for regs in (True, False):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"GLUON": True, "BLOCK_N": block_n, "P_REGS": regs}}))
        outs.append(fa_ck.flash_attn_fp8_func(q, k, v, backend="triton", **mask))
    assert [(c["P_REGS"], c["BLOCK_N"]) for _, c in launches] == [(True, block_n), (False, block_n)]
    assert rel_err(outs[0].double(), outs[1].double()) <= 1e-3
    ref, _ = reference.attention(q.double(), k.double(), v.double(), dtype=torch.float64,
                                 **(dict(window=window) if window else dict(causal=True)))
    assert_close("P in registers vs float64", outs[0], ref, FWD_BOUND)


@gpu
@pytest.mark.gpu
def test_gluon_fp8_inputs_float32_out(monkeypatch, schedule, gluon_calls):
    """fp8 tensors with descales and float32 out through the Gluon kernel: the same numbers as the
    quantising call (out stored as float32 rather than bf16), in the same kernel: by default
    (RAW_MAX, P in registers, v copied into the kernel's key order), and with both off."""
    q, k, v = (torch.randn(2, 300, 2, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    (q8, qd), (k8, kd), (v8, vd) = (tb.quantize_fp8(t, torch.float8_e4m3fn) for t in (q, k, v))
    v8 = tb.quantize.keys_contiguous(v8)
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    for switches in ({}, dict(RAW_MAX=False, P_REGS=False)):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule, **switches))
        got = fa_ck.flash_attn_fp8_func(q8, k8, v8, causal=True, q_descale=qd, k_descale=kd, v_descale=vd,
                                        out_dtype=torch.float32, backend="triton")
        assert launches[-1][1]["RAW_MAX"] == launches[-1][1]["P_REGS"] == (not switches)
        want = fa_ck.flash_attn_fp8_func(q, k, v, causal=True, backend="triton")
        assert got.dtype == torch.float32 and gluon_calls
        assert torch.equal(got.to(torch.bfloat16), want)


@gpu
@pytest.mark.gpu
def test_gluon_fp8_forward_leaves_unaligned_v_to_forward_py(gluon_calls):
    """A caller's keys-contiguous fp8 v with rows TMA cannot address goes to forward.py as it is;
    fa_ck's own quantisation pads the rows, so its v always can."""
    q, k = (torch.randn(1, 1000, 2, 128, device="cuda").to(torch.float8_e4m3fn) for _ in range(2))
    v = torch.randn(1, 2, 128, 1000, device="cuda").to(torch.float8_e4m3fn).permute(0, 3, 1, 2)   # rows of 1000 B
    fa_ck.flash_attn_fp8_func(q, k, v, backend="triton")
    assert not gluon_calls
    fa_ck.flash_attn_fp8_func(q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16), backend="triton")
    assert gluon_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("scale", [0.3, -0.1, 0.0, 1e-300])
def test_gluon_forward_softmax_scales(monkeypatch, dtype, scale):
    """The row max is of the raw scores (RAW_MAX) for a positive softmax scale; of the scaled
    ones for a negative scale (a raw max would be the minimum's) and for one that is 0 in
    float32 (-inf times it would be NaN). Masks, windows, GQA, varlen and head dims 16-128
    against the float64 reference."""
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}))
    calls = count_calls(monkeypatch, gluon, "_forward_gluon")
    for shape, feat in [((2, 1000, 1000, 8, 8, 64), dict(causal=True)), ((2, 777, 1531, 4, 2, 128), dict(causal=True)),
                        ((3, 1531, 129, 6, 3, 96), dict(window_size=(200, 37))), ((2, 1, 300, 4, 1, 128), {}),
                        ((2, 130, 257, 2, 1, 16), {}), ((2, 260, 260, 2, 2, 32), dict(window_size=(0, 0)))]:
        check(*shape, dtype=dtype, device="cuda", grads=False, softmax_scale=scale, **feat)
    check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 4, 2, 128, dtype=dtype, device="cuda",
                 causal=True, grads=False, softmax_scale=scale)
    assert calls and len(launches) >= 7 and all(c["RAW_MAX"] == (scale > 1e-30) for _, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_fp8_forward_negative_scale(monkeypatch, causal):
    """fp8 with a negative softmax scale (the descales fold into it): the row max of the scaled
    scores (no RAW_MAX with a negative scale), against the float64 reference within fp8's bound."""
    from test_fp8 import FWD_BOUND
    from attn_check import assert_close
    from fa_ck import reference
    calls = count_calls(monkeypatch, gluon, "_forward_gluon")
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    q, k, v = (torch.randn(2, 1000, 4, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    out = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, softmax_scale=-0.05, backend="triton")
    assert calls and launches and not any(c["RAW_MAX"] for _, c in launches)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, scale=-0.05, dtype=torch.float64)
    assert_close("out vs float64", out, ref, FWD_BOUND)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_fp8_forward_raw_max(monkeypatch, causal):
    """fp8 on fa_ck's own descales takes RAW_MAX (by default): the same numbers as without, to
    rounding; an all-zero head (descale 1e-12 / 448, its product with the scale kept normal)
    gives the float64 reference's uniform average, not NaN; a caller's descales take it too."""
    from attn_check import assert_close, rel_err
    from test_fp8 import FWD_BOUND
    from fa_ck import reference
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    q, k, v = (torch.randn(2, 1000, 4, 128, dtype=torch.bfloat16, device="cuda") * 3 for _ in range(3))
    q[0, :, 1] = 0                            # an all-zero head
    k[1, :, 2] = 0
    out, lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
    assert launches and launches[-1][1]["RAW_MAX"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"RAW_MAX": False}}))
    want, want_lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
    assert not launches[-1][1]["RAW_MAX"]
    assert rel_err(out.double(), want.double()) <= 2e-3
    assert (lse - want_lse).abs().max().item() <= 1e-4
    # the zero heads' uniform averages against float64 (the other heads' scores, std 9 at these
    # x3 inputs, make a far sharper softmax than test_fp8's bound is for: 12 % with RAW_MAX on or off)
    assert torch.isfinite(out).all()
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, dtype=torch.float64)
    assert_close("all-zero q head vs float64", out[0, :, 1], ref[0, :, 1], FWD_BOUND)
    assert_close("all-zero k head vs float64", out[1, :, 2], ref[1, :, 2], FWD_BOUND)
    monkeypatch.delenv("FA_CK_TRITON_CONFIG")
    (q8, qd), (k8, kd), (v8, vd) = (tb.quantize_fp8(t, torch.float8_e4m3fn) for t in (q, k, v))
    fa_ck.flash_attn_fp8_func(q8, k8, tb.quantize.keys_contiguous(v8), causal=causal, q_descale=qd, k_descale=kd,
                              v_descale=vd, backend="triton")
    assert launches[-1][1]["RAW_MAX"]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_fp8_callers_descales_of_any_sign(monkeypatch, causal):
    """A caller's descales whose product is negative (some heads), zero (one) or positive with
    both negative (one) keep RAW_MAX: those heads' q rows are negated in the kernel
    (forward_gluon_loads._copy_q_signed, by the producer warp).
    The same numbers, to rounding, as the scaled row max (RAW_MAX off), and the float64 reference
    of the dequantised inputs within fp8's bound; heads with a negative product differ from the
    positive descales' output (the sign reached the scores)."""
    from attn_check import assert_close, rel_err
    from test_fp8 import FWD_BOUND
    from fa_ck import reference
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    q, k, v = (torch.randn(2, 1000, 4, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    (q8, qd), (k8, kd), (v8, vd) = (tb.quantize_fp8(t, torch.float8_e4m3fn) for t in (q, k, v))
    q_sign = torch.tensor([[1.0, -1.0, 1.0, -1.0], [-1.0, 0.0, 1.0, 1.0]], device="cuda")
    k_sign = torch.tensor([[1.0, 1.0, -1.0, -1.0], [1.0, 1.0, 1.0, -1.0]], device="cuda")
    qs, ks = qd * q_sign, kd * k_sign

    def run(q_descale, k_descale):
        return fa_ck.flash_attn_fp8_func(q8, k8, v8, causal=causal, q_descale=q_descale, k_descale=k_descale,
                                         v_descale=vd, return_lse=True, backend="triton")
    plain, _ = run(qd, kd)
    out, lse = run(qs, ks)
    assert launches[-1][1]["RAW_MAX"] and torch.isfinite(out).all()
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"RAW_MAX": False}}))
    want, want_lse = run(qs, ks)
    assert not launches[-1][1]["RAW_MAX"]
    assert rel_err(out.double(), want.double()) <= 2e-3
    assert (lse - want_lse).abs().max().item() <= 1e-4
    deq = [t.double() * d.double()[:, None, :, None] for t, d in ((q8, qs), (k8, ks), (v8, vd))]
    ref, _ = reference.attention(*deq, causal=causal, dtype=torch.float64)
    assert_close("signed descales vs float64", out, ref, FWD_BOUND)
    negative = (q_sign * k_sign) < 0
    for b, h in negative.nonzero().tolist():
        assert rel_err(out[b, :, h].double(), plain[b, :, h].double()) > 0.1


@pytest.mark.parametrize("d, causal, sk, asked, want", [
    (128, False, 4096, None, True), (96, True, 4096, None, True), (64, False, 2048, None, True),
    (64, True, 4096, None, True), (64, False, 4096, None, False), (64, False, 16384, None, False),
    (64, False, 4096, True, True), (128, False, 4096, False, False)])
def test_q16_early_by_default_but_on_long_d64_full_calls(monkeypatch, d, causal, sk, asked, want):
    """Q16_EARLY (Q's 16-bit tile released once both warpgroups have rounded it): by default on fp8
    calls but d64 full calls in 256-key blocks past 2048 keys (measured slower there,
    h200-20261204-tile calls 1, 2, 6); as asked where asked; not in a 16-bit call's config."""
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    if asked is not None:
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"Q16_EARLY": asked}}))
    q = torch.randn(1, 16, 2, d, dtype=torch.bfloat16)
    p = _params(fp8=True, window_left=-1, window_right=0) if causal else _params(fp8=True)
    cfg = tb._config("fwd", q, d, p, sk, sk, tma_possible=True, gluon_possible=True)
    assert cfg["BLOCK_N"] == (128 if causal else 256) and cfg["Q16_EARLY"] is want
    monkeypatch.delenv("FA_CK_TRITON_CONFIG", raising=False)
    assert "Q16_EARLY" not in tb._config("fwd", q, d, _params(), sk, sk, tma_possible=True, gluon_possible=True)


@pytest.mark.skipif(bool(gluon._GLUON_ERROR), reason="this Triton has no Gluon Hopper API")
@pytest.mark.parametrize("d, q_fp8, want", [(128, False, True), (96, False, True), (64, False, True),
                                            (128, True, False)])
def test_q16_early_launched_where_the_kernel_rounds_q(monkeypatch, d, q_fp8, want):
    """The launcher passes Q16_EARLY where the config has it and the kernel rounds q itself
    (Q_CONVERT), never where q arrives in fp8 (the switch releases the 16-bit tile, which those
    calls do not have)."""
    launched = []
    monkeypatch.setattr(gluon, "_launch", lambda kernel, grid, args, consts: launched.append(consts))
    monkeypatch.setattr(gluon, "_sm_count", lambda device: 132)
    b, s, h = 1, 512, 2
    f8 = torch.float8_e4m3fn
    q = torch.randn(b, s, h, d).to(f8 if q_fp8 else torch.bfloat16)
    k = torch.randn(b, s, h, d).to(f8)
    v = torch.randn(b, h, d, s).to(f8).permute(0, 3, 1, 2)      # keys contiguous, as quantised
    out, lse = torch.empty(b, s, h, d, dtype=torch.bfloat16), torch.empty(b, h, s)
    qd = torch.ones(b, h, dtype=torch.float32 if q_fp8 else torch.int32)
    kd = vd = torch.ones(b, h)
    p = _params(fp8=True)
    cfg = {**configs.default("fwd", "cuda:sm90", d, torch.bfloat16, gluon=True),
           **configs.switches("fwd", "cuda:sm90", d, True), "F16_SCORES": False, "Q16_EARLY": True}
    scal = dict(scale_log2=0.1, window_left=-1, window_right=-1)
    gluon._forward_gluon(q, k, v, out, lse, None, None, qd, kd, vd, p, cfg, s, s, h, h, b, d, scal, 448.0)
    (consts,) = launched
    assert consts["Q_CONVERT"] == (not q_fp8) and consts["Q16_EARLY"] is want
    launched.clear()
    gluon._forward_gluon(q, k, v, out, lse, None, None, qd, kd, vd, p, {**cfg, "Q16_EARLY": False}, s, s, h, h, b,
                         d, scal, 448.0)
    assert launched[0]["Q16_EARLY"] is False       # (asked off: the release after the last QK^T)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("seqlen, d, causal", [(4096, 128, False), (4096, 128, True), (4000, 96, True),
                                               (2048, 64, False)])
@pytest.mark.parametrize("schedule", ["defaults", "device-desc-persistent-3", "persistent-3"], indirect=True)
def test_q16_early_changes_no_bit(monkeypatch, seqlen, d, causal, schedule):
    """Q16_EARLY moves only when the next tile's Q may load (after both warpgroups rounded this
    one, not after their last QK^T): out and lse bit for bit those of the release after the last
    QK^T, on calls of ~8 tiles per persistent program (a Q overwritten while still read would
    show; with three programs ~340), full and causal (the diagonal first), whole and partial
    blocks, Q through host-made descriptors or built on the device, d64 in 256-key blocks. (An
    arrive missing would hang, not fail.)"""
    torch.manual_seed(0)
    launches = record_launches(monkeypatch, plans, gluon.fwd_gluon_kernel)
    q, k, v = (torch.randn(2, seqlen, 16, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    runs = {}
    for early in (False, True):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule, Q16_EARLY=early))
        # (outputs come poisoned with NaN: conftest's FA_CK_POISON)
        runs[early] = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
        c = launches[-1][1]
        assert c["Q16_EARLY"] is early and c["Q_CONVERT"]
        assert c["HOST_DESC"] == schedule.get("HOST_DESC", True)
    (out, lse), (out_early, lse_early) = runs[False], runs[True]
    assert not out.isnan().any() and not lse.isnan().any()
    assert torch.equal(out_early, out) and torch.equal(lse_early, lse)
