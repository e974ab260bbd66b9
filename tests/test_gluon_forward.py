"""The Hopper forward in Gluon (kernels/forward_gluon.py): which calls it can serve, its launch
geometry and the config checks that guard it (CPU), and its results against the float64 reference
on an sm90 GPU in every schedule and variant the knobs reach. Gluon has no interpreter: on the CPU
the kernel is only compiled for sm90 (tools/triton_compile_check.py)."""
import dataclasses
import importlib
import json

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import fake_sm90
import fa_ck
from attn_check import assert_close, check, check_varlen, record_launches, rel_err
from conftest import GPU
from fa_ck import reference
from fa_ck.backends.triton import config, fp8, gluon_launch, sizes
from fa_ck.backends.triton.buffers import host_desc_ok
from fa_ck.backends.triton.config import CallSpec, coprime_programs, forward_config, fwd_whole_blocks
from fa_ck.backends.triton.kernels.common import key_blocks, warpgroup_blocks
from fa_ck.params import AttnParams

tb = importlib.import_module("fa_ck.backends.triton")      # (fa_ck.backends is the function)
device = importlib.import_module("fa_ck.backends.triton.device")
fast_path = importlib.import_module("fa_ck.backends.triton.fast_path")
SM90 = GPU and torch.cuda.get_device_capability() == (9, 0)
DEVICE = "cuda" if GPU else "cpu"
F8 = torch.float8_e4m3fn
no_gluon = pytest.mark.skipif(bool(gluon_launch.GLUON_ERROR), reason="this Triton has no Gluon Hopper API")
FACTS = fake_sm90.GLUON_FACTS


def spec(d=128, sq=4096, sk=4096, b=1, h=2, dtype=torch.bfloat16, asked=None, **kw) -> CallSpec:
    """An sm90 call whose tensors the Gluon kernels could all take; `asked`: FA_CK_TRITON_CONFIG's fwd."""
    fields = dict(arch="cuda:sm90", dtype=dtype, head_dim=d, batch=b, seqlen_q=sq, seqlen_k=sk, heads_q=h,
                  heads_kv=h, overrides=json.dumps({"fwd": asked}) if asked else "", **FACTS)
    fields.update(kw)
    return CallSpec(**fields)


def _params(**kw):
    return AttnParams(scale=0.125, **kw)


# ---------------------------------------------------------------------------- which calls it serves

def _gluon_ok(dtype=torch.bfloat16, d=128, **kw):
    q = torch.randn(2, 64, 4, d, dtype=dtype)
    return gluon_launch.gluon_ok(q, q, q, q, _params(**kw))


@no_gluon
def test_calls_the_gluon_kernels_serve(monkeypatch):
    """16-bit inputs TMA can address, head dims up to 256, no softcap, ALiBi or dropout; nothing
    in the interpreter."""
    monkeypatch.setattr(device, "INTERPRET", False)
    assert _gluon_ok() and _gluon_ok(torch.float16, 64) and _gluon_ok(window_left=16, window_right=0)
    assert _gluon_ok(d=256) and _gluon_ok(torch.float16, 160)
    assert not _gluon_ok(torch.float32) and not _gluon_ok(d=288)
    assert not _gluon_ok(softcap=30.0)
    assert not _gluon_ok(alibi_slopes=torch.ones(4))
    assert not _gluon_ok(dropout_p=0.1)
    q = torch.randn(2, 64, 4, 128, dtype=torch.bfloat16)
    assert not gluon_launch.gluon_ok(*(q[..., ::2],) * 4, _params())          # strided head dim
    off = torch.empty(q.numel() + 8, dtype=q.dtype)[1:q.numel() + 1].view(q.shape)
    assert not gluon_launch.gluon_ok(off, q, q, q, _params())                 # base 2 bytes off alignment
    monkeypatch.setattr(device, "INTERPRET", True)
    assert not _gluon_ok()                                                  # no Gluon interpreter


@no_gluon
def test_fp8_calls_the_gluon_forward_serves(monkeypatch):
    """fp8: e4m3fn q and k, v keys-contiguous with rows TMA can address (fa_ck pads them to 16
    keys), head dims up to 128; never the fnuz format or a v of plain layout."""
    monkeypatch.setattr(device, "INTERPRET", False)
    q = torch.randn(2, 64, 4, 128).to(F8)
    v = fp8.keys_contiguous(torch.randn(2, 64, 4, 128).to(F8))
    out = torch.empty(2, 64, 4, 128, dtype=torch.bfloat16)
    assert gluon_launch.gluon_ok(q, q, v, out, _params(fp8=True))
    assert not gluon_launch.gluon_ok(q, q, q, out, _params(fp8=True))              # v not keys-contiguous
    v_40 = fp8.keys_contiguous(torch.randn(2, 40, 4, 128).to(F8))                  # rows of 40 keys, padded to 48
    assert v_40.stride() == (4 * 128 * 48, 1, 128 * 48, 48)
    assert gluon_launch.gluon_ok(q[:, :40], q[:, :40], v_40, out[:, :40], _params(fp8=True))
    v_odd = torch.randn(2, 4, 128, 40).to(F8).permute(0, 3, 1, 2)                 # a caller's rows of 40 bytes
    assert not gluon_launch.gluon_ok(q[:, :40], q[:, :40], v_odd, out[:, :40], _params(fp8=True))
    fnuz = torch.float8_e4m3fnuz
    assert not gluon_launch.gluon_ok(q.to(fnuz), q.to(fnuz), v.to(fnuz), out, _params(fp8=True))
    q160 = torch.randn(2, 64, 4, 160).to(F8)                                        # fp8: head dims up to 128
    v160 = fp8.keys_contiguous(torch.randn(2, 64, 4, 160).to(F8))
    assert not gluon_launch.gluon_ok(q160, q160, v160, out, _params(fp8=True))


@no_gluon
def test_host_descriptors():
    """The 4-D descriptors the launchers make: (batch, heads, rows, head_dim) over (B, S, H, D)
    tensors of any layout, (batch, heads, head_dim, keys) for fp8's keys-contiguous v (padded to 16
    keys); none for empty and expanded (stride-0) tensors, which build theirs on the device."""
    q = torch.randn(2, 4, 300, 64, dtype=torch.bfloat16).transpose(1, 2)        # SDPA layout seen as BSHD
    d = gluon_launch.desc4(q, 128, 64)
    assert isinstance(d, gluon_launch.TensorDescriptor) and d.base is q and d.padding == "zero"
    assert (d.shape, d.strides, d.block_shape) == ([2, 4, 300, 64], [4 * 300 * 64, 300 * 64, 64, 1], [1, 1, 128, 64])
    assert d.layout == gluon_launch.smem_layout([1, 1, 128, 64], torch.bfloat16)
    v = fp8.keys_contiguous(torch.randn(2, 300, 4, 128).to(F8))
    d = gluon_launch.desc4(v, 128, 128, keys_contiguous=True)
    assert (d.shape, d.strides) == ([2, 4, 128, 300], [4 * 128 * 304, 128 * 304, 304, 1])
    assert gluon_launch.desc4(v, 128, 128, keys_contiguous=True, padded=True).shape == [2, 4, 128, 304]
    assert host_desc_ok(q, v)
    assert not host_desc_ok(q, q[:, :0])                                   # no tokens
    assert not host_desc_ok(q[:1].expand(2, -1, -1, -1))                  # batch stride 0
    assert host_desc_ok(q[:1])                                            # one batch entry: its stride is moot


def test_gluon_forward_only_on_sm90_and_where_the_kernel_reaches():
    """Unasked, the Gluon forward runs on sm90 alone (wgmma and TMA), never past head dim 256
    (128 for fp8), never where gluon_ok said no."""
    for d in (64, 128, 256):
        for arch in ("cuda:sm80", "cuda:sm100", "hip:gfx942", "interpreter"):
            assert not forward_config(spec(d, arch=arch)).gluon, (arch, d)
        assert not forward_config(spec(d, gluon_ok=False)).gluon
    assert not forward_config(spec(160, fp8=True)).gluon and not forward_config(spec(256, fp8=True)).gluon
    assert not forward_config(spec(512)).gluon
    assert not forward_config(spec(128, asked={"gluon": True}, gluon_ok=False)).gluon    # asked: still not


# ---------------------------------------------------------------------------- launch geometry

@pytest.mark.parametrize("seqlen, heads, sms, want_grid", [
    (384, 2 * 64, 132, 131),      # 3 query blocks: 2 units per head, 256 units: 131 programs
    (640, 256, 132, 131),         # 5 query blocks, 3 units per head (132 = 3 x 44)
    (896, 256, 132, 131),         # 7 query blocks, 4 units per head
    (512, 128, 132, 132),         # 4 query blocks: 2 units per head of equal weight, every SM
    (384, 32, 132, 64),           # fewer units than SMs: one program per unit
])
def test_gluon_forward_persistent_grid_cycles_through_every_unit(seqlen, heads, sms, want_grid):
    """The persistent forward pairs a head's k-th heaviest and k-th lightest query blocks into a
    unit (with an odd count the middle block is a unit alone); program p takes units p, p + P, ...:
    every unit once, and with an odd count each program cycles through every unit of a head."""
    cfg = forward_config(spec(64, seqlen, seqlen, h=heads, sm_count=sms, window_right=0,
                              asked={"gluon": True, "block_m": 128}))
    assert cfg.gluon and cfg.programs == want_grid
    per_head = (seqlen // 128 + 1) // 2
    units = heads * per_head
    taken = sorted(u for p in range(cfg.programs) for u in range(p, units, cfg.programs))
    assert taken == list(range(units))
    if seqlen // 128 % 2 and want_grid < units:
        assert {u % per_head for u in range(0, units, want_grid)} == set(range(per_head))


def test_persistent_programs_are_coprime_to_the_units_per_head():
    P = coprime_programs
    assert P(6144, 8, 132) == 131 and P(2048, 128, 132) == 131 and P(1000, 3, 132) == 131
    assert P(1000, 1, 132) == 132 and P(1000, 7, 132) == 132 and P(100, 8, 132) == 100
    for units, per_head in ((6144, 8), (4096, 16), (999, 6), (768, 3)):
        p = P(units, per_head, 132)
        assert p <= 132 and {u % per_head for u in range(0, units, p)} == set(range(per_head))


@no_gluon
def test_fake_sm90_forward_launches_host_made_descriptors(monkeypatch):
    """On the fake sm90: q, k, v (and out, with TMA stores) reach the kernel as host-made
    descriptors where asked; asked off, or for expanded k and v and for varlen calls, the kernel
    gets the tensors and builds its descriptors on the device (Triton's allocator set first)."""
    log = fake_sm90.install(monkeypatch, sms=16)
    q, k, v = fake_sm90.inputs(b=2, sq=384, sk=300, d=128)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"gluon": true, "host_desc": true}}')
    tb.forward(q, k, v, _params(window_right=0))
    (grid, args, c), = fake_sm90.launched(log, "fwd_gluon_kernel")
    assert c["HOST_DESC"] and all(isinstance(a, gluon_launch.TensorDescriptor) for a in args[:3])
    assert isinstance(args[4], gluon_launch.TensorDescriptor) == c["TMA_STORE"]
    assert grid == (coprime_programs(2 * 4 * 2, 2, 16), 1, 1) and "set_allocator" not in log
    log.clear()
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"gluon": true, "host_desc": false}}')
    tb.forward(q, k, v, _params(window_right=0))
    (_, args, c), = fake_sm90.launched(log, "fwd_gluon_kernel")
    assert not c["HOST_DESC"] and not c["TMA_STORE"] and all(isinstance(a, torch.Tensor) for a in args[:5])
    assert fake_sm90.kernel_names(log) == ["set_allocator", "fwd_gluon_kernel"]
    log.clear()
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"gluon": true, "host_desc": true}}')
    tb.forward(q, k[:1].expand(2, -1, -1, -1), v[:1].expand(2, -1, -1, -1), _params())     # batch stride 0
    (_, args, c), = fake_sm90.launched(log, "fwd_gluon_kernel")
    assert not c["HOST_DESC"] and isinstance(args[1], torch.Tensor)
    log.clear()
    cu = torch.tensor([0, 100, 384], dtype=torch.int32)
    p = dataclasses.replace(_params(), cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=284, max_seqlen_k=284)
    tb.forward(q[0], q[1], q[1], p)
    (_, args, c), = fake_sm90.launched(log, "fwd_gluon_kernel")
    assert c["VARLEN"] and not c["HOST_DESC"] and isinstance(args[0], torch.Tensor)


@no_gluon
def test_fake_sm90_fp8_forward_rounds_q_in_the_kernel_only_from_16_bit_q(monkeypatch):
    """fp8 of 16-bit inputs: the kernel rounds q itself (Q_CONVERT) and may release q's 16-bit
    tile early (Q16_EARLY, where asked); a caller's fp8 q has neither."""
    log = fake_sm90.install(monkeypatch)
    q, k, v = fake_sm90.inputs(b=1, sq=512, sk=512, d=128)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"gluon": true, "q16_early": true}}')
    tb.forward(q, k, v, _params(fp8=True))
    (_, _, c), = fake_sm90.launched(log, "fwd_gluon_kernel")
    assert c["FP8"] and c["Q_CONVERT"] and c["Q16_EARLY"]
    log.clear()
    q8, k8 = q.to(F8), k.to(F8)
    v8 = fp8.keys_contiguous(v.to(F8))
    tb.forward(q8, k8, v8, _params(fp8=True))
    (_, _, c), = fake_sm90.launched(log, "fwd_gluon_kernel")
    assert c["FP8"] and not c["Q_CONVERT"] and not c["Q16_EARLY"]


# ---------------------------------------------------------------------------- which blocks a warpgroup reads

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
    """config.fwd_whole_blocks's diag_first lets the Gluon forward stream a tile's blocks last to
    first, and each warpgroup release unread the ones it cannot see (they come first), mask the
    next (its diagonal's) and no other. By brute force over the calls it allows (as the consumer
    runs common.key_blocks / warpgroup_blocks): for each warpgroup of every tile that sees keys,
    the blocks past the n_mine it reads hide every key, every block it reads but its last is whole
    to every row, and every row sees a key of that last block (so the first block it multiplies,
    masked, gives each row a max), unless no row sees any key and it is the only one."""
    rng = np.random.default_rng(7)
    cases = []
    for _ in range(60):
        sq, sk = 128 * int(rng.integers(1, 13)), block_n * int(rng.integers(1, 1536 // block_n + 1))
        for fp8_call in (False, True):             # (fp8 streams the diagonal first too)
            assert fwd_whole_blocks(spec(sq=sq, sk=sk, window_right=0, fp8=fp8_call), 128, block_n) == (True, True)
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
    for kw, bm, bn in [(dict(sq=1000, sk=1024, window_right=0), 128, 128),
                       (dict(sq=1024, sk=1024, window_right=0, varlen=True), 128, 128),
                       (dict(sq=1024, sk=1024, window_left=64, window_right=0), 128, 128),
                       (dict(sq=1024, sk=1024, window_right=5), 128, 128),
                       (dict(sq=1024, sk=1000, window_right=0), 128, 128),
                       (dict(sq=1024, sk=1024, window_right=0), 128, 32),
                       (dict(sq=2048, sk=2048), 192, 128), (dict(sq=2048, sk=2048, window_right=0), 192, 128)]:
        assert fwd_whole_blocks(spec(**kw), bm, bn)[1] is False, (kw, bm, bn)
    assert fwd_whole_blocks(spec(sq=1000, sk=1024), 128, 128) == (True, False)
    assert fwd_whole_blocks(spec(sq=1024, sk=1000), 128, 128) == (False, False)
    assert fwd_whole_blocks(spec(sq=1024, sk=1024, varlen=True), 128, 128) == (False, False)


# ---------------------------------------------------------------------------- config checks

def test_tma_store_only_through_host_descriptors():
    """host_desc and tma_store as asked, but out leaves by TMA stores only through a host-made
    descriptor, never for varlen calls or where host descriptors cannot describe the tensors."""
    for host in (True, False):
        for store in (True, False):
            cfg = forward_config(spec(asked={"gluon": True, "host_desc": host, "tma_store": store}))
            assert (cfg.host_desc, cfg.tma_store) == (host, store and host)
    asked = {"gluon": True, "host_desc": True, "tma_store": True}
    for kw in (dict(varlen=True), dict(host_desc_ok=False)):
        cfg = forward_config(spec(asked=asked, **kw))
        assert not cfg.host_desc and not cfg.tma_store, kw
    assert not forward_config(spec(asked=asked, out_bytes=4)).tma_store     # (16-bit out only)


def test_tma_store_where_shared_memory_holds_it():
    """Out's staging tiles (whole or half as wide) go beside Q and the rings only where shared
    memory holds them: not beside 3-deep rings of 128 keys at d128 (an error where asked with
    those tiles), at d64 yes."""
    def cfg(d=128, **asked):
        return forward_config(spec(d, asked={"gluon": True, **asked}))
    assert not cfg(num_stages=3).tma_store
    assert cfg(num_stages=3, block_n=64, tma_store=True).tma_store
    with pytest.raises(ValueError, match=r"\['fwd'\]: tma_store does not fit shared memory beside block_n 128 "
                                         r"and num_stages 3 at head dim 128"):
        cfg(num_stages=3, tma_store=True)
    assert cfg(64, num_stages=3, tma_store=True).tma_store
    assert sizes.fwd_gluon(128, 128, 128, 2, 2, out_bytes=2) == 128 * 128 * 2 * 6 + sizes.BARRIERS
    assert sizes.fwd_gluon(128, 128, 128, 3, 2, out_bytes=2) > sizes.SM90_BYTES


def test_gluon_forward_past_d128_fits_shared_memory():
    """Head dims 129-256 (16-bit): the Gluon forward's own tiles fit (Q 64 KB, 64-key rings,
    out staged half as wide); asked tiles past shared memory are an error naming the bytes; 32-key
    blocks leave room for all of out."""
    for d in (160, 256):
        cfg = forward_config(spec(d, asked={"gluon": True}))
        need = sizes.fwd_gluon(d, cfg.block_m, cfg.block_n, cfg.num_stages, 2, out_bytes=2 if cfg.tma_store else 0)
        assert cfg.gluon and need <= sizes.SM90_BYTES
    assert forward_config(spec(256, asked={"gluon": True, "block_n": 64, "num_stages": 2})).o_cols == 128
    for asked, needs in (({"num_stages": 3}, 263168), ({"block_n": 128}, 328704),
                         ({"num_stages": 3, "tma_store": True}, 263168)):   # the tiles alone do not fit
        with pytest.raises(ValueError, match=rf"\['fwd'\]: the Gluon forward needs {needs} bytes of shared memory"):
            forward_config(spec(256, asked={"gluon": True, "block_n": 64, **asked}))
    assert forward_config(spec(256, asked={"gluon": True, "block_n": 32, "num_stages": 3})).gluon
    cfg = forward_config(spec(256, asked={"gluon": True, "block_n": 32, "tma_store": True}))
    assert cfg.tma_store and cfg.o_cols == 256


def test_gluon_forward_checks_its_fixed_tiles():
    """The Gluon forward's two warpgroups of 64 rows (block_m 128, num_warps 4), or three (block_m
    192: 16-bit inputs at head dims up to 64, without late_sum); every other kernel's tiles powers
    of two. Each a ValueError naming the knob."""
    for bad in ({"block_m": 64}, {"num_warps": 8}):
        with pytest.raises(ValueError, match=r"the Gluon kernel has block_m 128 and num_warps 4"):
            forward_config(spec(asked={"gluon": True, **bad}))
    for gluon in (False, True):
        for tile, bad in (("block_m", 96), ("block_n", 48), ("block_n", 0)):
            with pytest.raises(ValueError, match=rf"\['fwd'\]: {tile} must be a power of two, got {bad}"):
                forward_config(spec(64, asked={"gluon": gluon, tile: bad}))
    for tile, bad in (("block_m", 64.0), ("block_n", "64"), ("num_stages", True)):
        with pytest.raises(ValueError, match=rf"\['fwd'\]: {tile} must be an integer, got {bad!r}"):
            forward_config(spec(asked={tile: bad}))
    for d in (16, 48, 64):
        assert forward_config(spec(d, asked={"gluon": True, "block_m": 192})).block_m == 192
    with pytest.raises(ValueError, match=r"block_m 192 \(three consumer warpgroups\) is for 16-bit inputs at head "
                                         r"dims up to 64, got torch.bfloat16 at head dim 65"):
        forward_config(spec(65, asked={"gluon": True, "block_m": 192}))
    with pytest.raises(ValueError, match="block_m 192 .* got fp8 at head dim 64"):
        forward_config(spec(64, fp8=True, asked={"gluon": True, "block_m": 192}))
    with pytest.raises(ValueError, match=r"\['fwd'\]: block_m must be a power of two, got 192"):
        forward_config(spec(64, asked={"gluon": False, "block_m": 192}))
    with pytest.raises(ValueError, match=r"late_sum is in the two-warpgroup Gluon forward only \(block_m 128\), "
                                         r"got block_m 192"):
        forward_config(spec(64, asked={"gluon": True, "block_m": 192, "late_sum": True}))
    with pytest.raises(ValueError, match="the Gluon fp8 forward takes 32 or more keys per block"):
        forward_config(spec(64, fp8=True, asked={"gluon": True, "block_n": 16}))


def test_late_sum_asked_keeps_two_warpgroups():
    """late_sum asked alone is served on two warpgroups, whatever block_m the call had by default."""
    for b, h, s in ((4, 32, 4096), (1, 8, 1024)):
        cfg = forward_config(spec(64, s, s, b=b, h=h, asked={"gluon": True, "late_sum": True}))
        assert (cfg.block_m, cfg.late_sum) == (128, True)


def test_every_default_and_candidate_tile_is_a_power_of_two():
    """Tiles are arange sizes in every kernel: powers of two, by default and among autotune's
    candidates, on every architecture (the Gluon forward's 192 queries aside); every Gluon candidate
    keeps the kernel's fixed tiles."""
    for arch in ("cuda:sm90", "cuda:sm80", "hip:gfx942", "interpreter"):
        for d in (16, 64, 128, 256):
            for dtype in (torch.bfloat16, torch.float32):
                for ok in (False, True) if dtype == torch.bfloat16 else (False,):   # (gluon_ok: 16-bit only)
                    s = spec(d, 2048, 2048, arch=arch, dtype=dtype, gluon_ok=ok)
                    cfg, bwd = forward_config(s), config.backward_config(s)
                    kernels = [("fwd", cfg), ("bwd_dkdv", bwd.dkdv)] + ([("bwd_dq", bwd.dq)] if bwd.dq else [])
                    for kernel, c in kernels:
                        for tiles in config.candidates(kernel, s, c):
                            m, n = tiles["block_m"], tiles["block_n"]
                            assert n >= 1 and not n & (n - 1), (arch, kernel, tiles)
                            assert (m == 192 and c.gluon and kernel == "fwd") or (m >= 1 and not m & (m - 1))
                            if c.gluon:
                                assert tiles["num_warps"] == 4 and (kernel == "bwd_dkdv" or m in (128, 192))


@no_gluon
def test_bad_knobs_raise_before_any_launch(monkeypatch):
    """On the fake sm90 a knob the Gluon forward cannot take is a ValueError naming it, and
    nothing was launched (fp8 quantisation included)."""
    log = fake_sm90.install(monkeypatch)
    q, k, v = fake_sm90.inputs(b=1, sq=256, sk=256, d=64)
    for asked, match, fp8_call in ((dict(block_m=64), "block_m 128 and num_warps 4", False),
                                   (dict(block_m=192, late_sum=True), "late_sum", False),
                                   (dict(block_m=192), "block_m 192", True),
                                   (dict(f16_scores=False, f16_wide=True), "f16_wide", True),
                                   (dict(pingpong=True), "unknown keys", False)):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"gluon": True, **asked}}))
        with pytest.raises(ValueError, match=match):
            tb.forward(q, k, v, _params(fp8=fp8_call))
        assert not [e for e in log if e != "set_allocator"], asked


def test_f16_scores_only_where_the_loop_has_no_mask():
    """f16 scores (fp8 only; q and k quantised to F16_SCORES_QK_MAX, 1 exponential in 4 by a
    polynomial) only on fa_ck's own quantisation with q rounded in the kernel, late row sums, the
    raw row max (a positive normal scale), and no masked block past a warpgroup's first: whole key
    blocks without a window, or causal tiles that stream the diagonal first. f16_wide only on f16
    scores; asked beside f16_scores off, an error naming it."""
    asked = {"gluon": True, "f16_scores": True}

    def cfg(**kw):
        return forward_config(spec(fp8=True, asked=dict(asked, **kw.pop("more", {})), **kw))
    on = cfg()
    assert on.f16_scores and on.qk_max == config.F16_SCORES_QK_MAX and on.q_convert
    assert cfg(window_right=0).f16_scores and cfg(window_right=0).diag_first
    for kw in (dict(fp8_inputs=True, dtype=F8), dict(q_tma_ok=False), dict(more={"late_sum": False}),
               dict(scale_positive=False, scale_log2_normal=False), dict(scale_log2_normal=False),
               dict(sq=4000, window_right=0), dict(window_left=256, window_right=256), dict(sk=4000),
               dict(varlen=True)):
        off = cfg(**kw)
        assert off.gluon and not off.f16_scores and not off.f16_wide and off.qk_max == 0.0, kw
    plain = forward_config(spec(asked=asked))
    assert not plain.f16_scores and not plain.f16_wide and not plain.q16_early and not plain.q_convert
    assert not cfg(sk=4000, more={"f16_wide": True}).f16_wide            # launched only with f16 scores
    with pytest.raises(ValueError, match=r"f16_wide is a step of f16_scores' f16 scores"):
        cfg(more={"f16_scores": False, "f16_wide": True})
    for bad in (1, "yes"):
        with pytest.raises(ValueError, match=r"f16_wide must be true or false"):
            cfg(more={"f16_wide": bad})


def test_q16_early_only_where_the_kernel_rounds_q():
    """q16_early releases the 16-bit Q tile the kernel rounds (fp8 of 16-bit inputs, q readable
    by TMA): as asked there, never elsewhere."""
    for early in (False, True):
        asked = {"gluon": True, "q16_early": early}
        assert forward_config(spec(fp8=True, asked=asked)).q16_early is early
        assert forward_config(spec(64, fp8=True, asked=asked)).q16_early is early
        for kw in (dict(fp8=True, fp8_inputs=True, dtype=F8), dict(fp8=True, q_tma_ok=False), dict(fp8=False)):
            assert not forward_config(spec(asked=asked, **kw)).q16_early, kw


# ---------------------------------------------------------------------------- on an sm90 GPU

gpu = pytest.mark.skipif(not SM90 or bool(gluon_launch.GLUON_ERROR), reason="needs an sm90 GPU and Gluon")


# (knobs, SMs seen): q, k, v as host-made descriptors or built per tile on the device (as for every
# varlen call); out by TMA stores or plain stores; row sums a block late; a GPU seen as 3 SMs, so that
# each persistent program carries its rings and barriers through many tiles
SCHEDULES = {"defaults": ({}, None),
             "device_desc": ({"host_desc": False}, None),
             "plain_store": ({"tma_store": False}, None),
             "tma_store_3_programs": ({"tma_store": True}, 3),
             "device_desc_3_programs": ({"host_desc": False}, 3),
             "late_sum_3_programs": ({"late_sum": True}, 3)}
FEW = ["defaults", "device_desc_3_programs", "tma_store_3_programs"]


@pytest.fixture(params=list(SCHEDULES))
def schedule(request, monkeypatch):
    knobs, programs = SCHEDULES[request.param]
    if programs:
        monkeypatch.setattr(device, "sm_count", lambda dev: programs)
    return knobs


def ask(schedule, **knobs):
    """FA_CK_TRITON_CONFIG sending the forward to the Gluon kernel with these knobs."""
    return json.dumps({"fwd": {"gluon": True, **schedule, **knobs}})


@pytest.fixture
def gluon_calls(request, monkeypatch, schedule):
    """Sends every call it can serve to the Gluon forward in the schedule and records its launches
    (each test asserts its calls went there); afterwards checks that the schedule reached the
    kernel (its constexprs and grid), not only the config."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    yield launches
    knobs, programs = SCHEDULES[request.node.callspec.params["schedule"]]
    for grid, c in launches:
        assert not c["TMA_STORE"] or c["HOST_DESC"]              # TMA stores only through host descriptors
        if "host_desc" in knobs and not c["VARLEN"]:
            assert c["HOST_DESC"] == knobs["host_desc"]
        if knobs.get("tma_store") is False:
            assert not c["TMA_STORE"]
        if knobs.get("late_sum") and c["BLOCK_M"] == 128:
            assert c["LATE_SUM"]
        if programs:
            assert grid[0] <= programs
    if knobs.get("tma_store") and any(not c["VARLEN"] and not c["FP8"] and c["BLOCK_D"] <= 128 for _, c in launches):
        assert any(c["TMA_STORE"] for _, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("schedule, dtype", [("defaults", torch.float16)] + [(s, torch.bfloat16) for s in SCHEDULES],
                         indirect=["schedule"])
@pytest.mark.parametrize("shape", [
    (2, 1000, 1000, 4, 4, 128), (2, 777, 1531, 4, 2, 64), (3, 1531, 129, 6, 3, 96), (2, 1, 300, 4, 1, 128),
    (1, 300, 1, 2, 2, 64), (1, 130, 257, 2, 1, 16), (2, 517, 600, 4, 2, 256),
])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_forward_matches_reference(gluon_calls, dtype, shape, causal):
    check(*shape, dtype=dtype, device="cuda", causal=causal, grads=False)
    assert gluon_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("knobs, shape, causal", [({}, (2, 1000, 1000, 4, 2, 128), True),
                                                  ({}, (1, 600, 700, 2, 2, 64), False),
                                                  ({"block_m": 192}, (1, 2100, 2300, 4, 2, 64), False)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gluon_forward_gradients_through_it(monkeypatch, knobs, shape, causal, dtype):
    """out and lse of the Gluon forward (two or three warpgroups) carry the gradients."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}, **knobs))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    check(*shape, dtype=dtype, device="cuda", causal=causal)
    assert [c["BLOCK_M"] for _, c in launches] == [knobs.get("block_m", 128)]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [2, 3])
@pytest.mark.parametrize("block_n", [128, 64])
def test_gluon_forward_every_candidate(monkeypatch, num_stages, block_n):
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}, block_n=block_n, num_stages=num_stages))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    check(2, 1111, 1500, 4, 2, 128, dtype=torch.bfloat16, device="cuda", causal=True, grads=False)
    check(1, 700, 640, 2, 2, 64, dtype=torch.bfloat16, device="cuda", grads=False)
    assert launches and all((c["BLOCK_N"], c["NUM_BUF"]) == (block_n, num_stages) for _, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape, window", [((4, 512, 512, 4, 2, 64), (-1, 0)), ((2, 300, 300, 4, 4, 48), (-1, 0)),
                                           ((2, 600, 511, 2, 1, 64), (100, 0)), ((3, 77, 1, 2, 2, 64), (-1, 0))])
def test_gluon_forward_short_causal_64_keys(monkeypatch, shape, window):
    """64-key blocks on short causal calls (a warpgroup first releases the block it cannot see)."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}, block_n=64))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    check(*shape, dtype=torch.bfloat16, device="cuda", window_size=window)
    assert launches and all(c["BLOCK_N"] == 64 for _, c in launches)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 1000, 1000, 4, 4, 64), (2, 777, 1531, 4, 2, 48), (1, 1, 300, 2, 1, 64),
                                   (2, 300, 1, 2, 2, 32), (1, 193, 257, 2, 1, 16)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("schedule", FEW, indirect=True)
def test_gluon_forward_three_warpgroups(gluon_calls, schedule, monkeypatch, shape, causal):
    """block_m 192: three consumer warpgroups of 64 queries, Q loaded as three boxes, every K / V
    buffer released by all three, in every schedule; tiles that end past the sequence, ones whose
    later warpgroups see no query, windows and varlen."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule, block_m=192))
    check(*shape, dtype=torch.bfloat16, device="cuda", causal=causal, grads=False)
    if causal:
        check(2, 900, 1100, 4, 2, 64, dtype=torch.float16, device="cuda", window_size=(200, 37), grads=False)
        check_varlen([5, 1, 0, 300, 193, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 4, 4, 64, dtype=torch.bfloat16,
                     device="cuda", causal=True, grads=False)
    assert gluon_calls and all(c["BLOCK_M"] == 192 for _, c in gluon_calls)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [
    (2, 1000, 1024, 4, 2, 128), (1, 4096, 512, 4, 4, 64), (4, 512, 512, 4, 2, 64), (2, 384, 640, 2, 2, 256),
    (2, 2048, 2048, 12, 12, 64), (2, 300, 640, 2, 2, 256), (1, 512, 1024, 2, 2, 128), (2, 1024, 512, 2, 1, 128),
    (2, 1024, 1000, 4, 4, 64), (1, 512, 576, 2, 1, 128),
])
@pytest.mark.parametrize("schedule", FEW, indirect=True)
def test_gluon_forward_even_keys(gluon_calls, schedule, shape):
    """Keys a whole number of blocks (EVEN_N, not varlen): full attention compiles no masked
    softmax (any query count, 128 or 192 queries per tile, 64-key blocks past d128, GQA); causal
    calls with whole 128-query tiles stream the diagonal's block first (DIAG_FIRST: more keys than
    queries, fewer, and rows that see no key; 128- and 64-key blocks), others keep the per-block
    mask."""
    b, sq, sk, hq, hkv, d = shape
    check(*shape, dtype=torch.bfloat16, device="cuda", grads=False)
    assert gluon_calls and all(c["EVEN_N"] == (sk % c["BLOCK_N"] == 0) and not c["DIAG_FIRST"] for _, c in gluon_calls)
    del gluon_calls[:]
    check(*shape, dtype=torch.float16, device="cuda", causal=True, grads=False)
    for _, c in gluon_calls:
        even = sk % c["BLOCK_N"] == 0
        assert c["EVEN_N"] == even and c["DIAG_FIRST"] == (even and c["BLOCK_M"] == 128 and sq % 128 == 0)
    assert gluon_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("window", [(64, 0), (200, 37), (-1, 100), (5, -1), (0, 0)])
def test_gluon_forward_windows(gluon_calls, window):
    check(2, 900, 1100, 4, 2, 128, dtype=torch.bfloat16, device="cuda", window_size=window, grads=False)
    assert gluon_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_forward_varlen(gluon_calls, causal):
    lens_q = [5, 1, 0, 300, 129, 1000, 2]
    lens_k = [1, 0, 3, 300, 700, 1000, 130]
    check_varlen(lens_q, lens_k, 8, 2, 128, dtype=torch.bfloat16, device="cuda", causal=causal, grads=False)
    check_varlen(lens_q, lens_k, 4, 4, 64, dtype=torch.float16, device="cuda", causal=causal, grads=False,
                 window_size=(100, 0) if causal else (-1, -1))
    assert gluon_calls and all(c["VARLEN"] for _, c in gluon_calls)


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
@pytest.mark.bigmem
@pytest.mark.parametrize("schedule", FEW, indirect=True)
def test_gluon_forward_past_2_31_elements(gluon_calls):
    # q and out have 2^31 + 2^16 elements: the rows of the last programs pass 32-bit offsets.
    from attn_check import FWD_TOL
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
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("scale", [0.3, -0.1, 0.0, 1e-300])
def test_gluon_forward_softmax_scales(monkeypatch, dtype, scale):
    """The row max is of the raw scores (RAW_MAX) for a positive softmax scale; of the scaled ones
    for a negative scale (a raw max would be the minimum's) and for one that is 0 in float32 (-inf
    times it would be NaN). Masks, windows, GQA, varlen and head dims 16-128 against float64."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    for shape, feat in [((2, 1000, 1000, 8, 8, 64), dict(causal=True)), ((2, 777, 1531, 4, 2, 128), dict(causal=True)),
                        ((3, 1531, 129, 6, 3, 96), dict(window_size=(200, 37))), ((2, 1, 300, 4, 1, 128), {}),
                        ((2, 130, 257, 2, 1, 16), {}), ((2, 260, 260, 2, 2, 32), dict(window_size=(0, 0)))]:
        check(*shape, dtype=dtype, device="cuda", grads=False, softmax_scale=scale, **feat)
    check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 4, 2, 128, dtype=dtype, device="cuda",
                 causal=True, grads=False, softmax_scale=scale)
    assert len(launches) >= 7 and all(c["RAW_MAX"] == (scale > 1e-30) for _, c in launches)


# ---------------------------------------------------------------------------- fp8 on an sm90 GPU

def quantized_as_launched(q, k, v, launches):
    """((q8, qd), (k8, kd), (v8, vd)) as the recorded Gluon launches read them, and whether they
    summed their scores in f16 (q and k then quantised to F16_SCORES_QK_MAX)."""
    f16 = {bool(c["F16_SCORES"]) for _, c in launches}
    assert len(f16) == 1, f"the launches disagree on F16_SCORES: {launches}"
    f16 = f16.pop()
    qk_max = config.F16_SCORES_QK_MAX if f16 else 0.0
    return (*(tb.quantize_fp8(t, F8, target_max=qk_max) for t in (q, k)), tb.quantize_fp8(v, F8)), f16


def _blocks_as_launched(launches, sq, sk, causal):
    """The launch's (block_n, diag_first, f16 scores), checked against what those allow."""
    (_, c), = launches
    bn = c["BLOCK_N"]
    assert c["DIAG_FIRST"] == (causal and sq % 128 == 0 and sk % bn == 0 and bn in (64, 128))
    if c["F16_SCORES"]:                      # (never with a masked block past a warpgroup's first)
        assert sk % bn == 0 and (not causal or c["DIAG_FIRST"]) and c["LATE_SUM"]
    return bn, c["DIAG_FIRST"], c["F16_SCORES"]


def _qkv(b, sq, sk, hq, hkv, d, scale=1.0):
    q = torch.randn(b, sq, hq, d, dtype=torch.bfloat16, device="cuda") * scale
    k, v = (torch.randn(b, sk, hkv, d, dtype=torch.bfloat16, device="cuda") * scale for _ in range(2))
    return q, k, v


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [
    (2, 1024, 1024, 4, 2, 128), (1, 2000, 2048, 2, 2, 64), (2, 777, 1536, 4, 4, 96), (1, 1, 512, 2, 1, 128),
    (1, 300, 16, 2, 2, 64), (1, 333, 1001, 2, 1, 48),
])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("schedule", FEW + ["late_sum_3_programs"], indirect=True)
def test_gluon_fp8_forward(gluon_calls, shape, causal):
    """The fp8 forward in Gluon: against the float64 reference (fp8's own error) and against the
    torch emulation of the fp8 scheme with the kernel's key blocks, in their order."""
    from test_fp8 import EMU_BOUND, EMU_LSE_BOUND, F16_EMU_BOUND, FWD_BOUND, emulate
    b, sq, sk, hq, hkv, d = shape
    q, k, v = _qkv(*shape)
    out, lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, dtype=torch.float64)
    assert_close("out vs float64", out, ref, FWD_BOUND)
    block_n, last_first, _ = _blocks_as_launched(gluon_calls, sq, sk, causal)
    ((q8, qd), (k8, kd), (v8, vd)), f16 = quantized_as_launched(q, k, v, gluon_calls)
    emu, emu_lse, _ = emulate(q8, k8, v8, qd, kd, vd, causal=causal, block_n=block_n, last_first=last_first,
                              s_f16=f16)
    # (with a handful of rows the statistic spreads: one query row reached 0.0077 over ten seeds)
    few_rows = b * sq * hq < 16
    bound = F16_EMU_BOUND if f16 else EMU_BOUND[torch.bfloat16]
    assert_close("out vs fp8 emulation", out, emu, bound * (2 if few_rows else 1))
    assert_close("lse vs fp8 emulation", lse, emu_lse, EMU_LSE_BOUND)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 1024, 1024, 4, 2, 128), (1, 512, 512, 2, 2, 64), (1, 384, 384, 4, 1, 96),
                                   (1, 256, 256, 2, 1, 128)])
@pytest.mark.parametrize("late_sum", [True, False])
def test_gluon_fp8_forward_diagonal_first(monkeypatch, shape, late_sum):
    """Causal fp8 calls in whole 128-row tiles stream each tile's diagonal block first: against
    float64 and against the emulation walking the blocks last to first, with row sums a block late
    or not (f16 scores only with them)."""
    from test_fp8 import EMU_BOUND, EMU_LSE_BOUND, F16_EMU_BOUND, FWD_BOUND, emulate
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}, late_sum=late_sum))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    b, sq, sk, hq, hkv, d = shape
    q, k, v = _qkv(*shape)
    out, lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=True, return_lse=True, backend="triton")
    assert launches and all(c["DIAG_FIRST"] and c["LATE_SUM"] == late_sum for _, c in launches)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=True, dtype=torch.float64)
    assert_close("out vs float64", out, ref, FWD_BOUND)
    block_n, _, _ = _blocks_as_launched(launches, sq, sk, True)
    ((q8, qd), (k8, kd), (v8, vd)), f16 = quantized_as_launched(q, k, v, launches)
    emu, emu_lse, _ = emulate(q8, k8, v8, qd, kd, vd, causal=True, block_n=block_n, last_first=True, s_f16=f16)
    assert_close("out vs fp8 emulation", out, emu, F16_EMU_BOUND if f16 else EMU_BOUND[torch.bfloat16])
    assert_close("lse vs fp8 emulation", lse, emu_lse, EMU_LSE_BOUND)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape,causal", [((2, 1024, 1024, 4, 2, 128), False), ((2, 1024, 1024, 4, 2, 128), True),
                                          ((1, 512, 1536, 4, 4, 64), False), ((1, 384, 384, 4, 1, 96), True),
                                          ((1, 1000, 1000, 2, 2, 128), True), ((1, 256, 256, 2, 2, 128), False)])
def test_gluon_fp8_f16_scores(monkeypatch, shape, causal):
    """f16 scores (asked): taken where no masked block follows a warpgroup's first (not at 1000
    keys), against float64 (fp8's error) and the float64 emulation of its quantisation (q and k
    to F16_SCORES_QK_MAX)."""
    from test_fp8 import EMU_LSE_BOUND, F16_EMU_BOUND, FWD_BOUND, emulate
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}, f16_scores=True))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    b, sq, sk, hq, hkv, d = shape
    q, k, v = _qkv(*shape)
    out, lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
    block_n, last_first, f16 = _blocks_as_launched(launches, sq, sk, causal)
    taken = sk % 128 == 0 and (not causal or sq % 128 == 0)
    (_, c), = launches
    assert f16 == taken and c["F16_SCORES"] == taken
    assert c["QK_MAX"] == (config.F16_SCORES_QK_MAX if taken else 448.0)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, dtype=torch.float64)
    assert_close("out vs float64", out, ref, FWD_BOUND)
    ((q8, qd), (k8, kd), (v8, vd)), _ = quantized_as_launched(q, k, v, launches)
    emu, emu_lse, _ = emulate(q8, k8, v8, qd, kd, vd, causal=causal, block_n=block_n, last_first=last_first,
                              s_f16=taken)
    assert_close("out vs fp8 emulation", out, emu, F16_EMU_BOUND)
    assert_close("lse vs fp8 emulation", lse, emu_lse, EMU_LSE_BOUND)


def _sharp_heads():
    """N(0, 1) scores; standard deviation 4; one head whose q and k are one tensor times 100 (each
    query's own key ahead by ~10^5 nats, past f16's range in log2 units); two heads with an outlier
    channel in q and k, 20 and 60 times U(0.5, 1)."""
    q, k, v = (torch.randn(1, 2048, 5, 128, device="cuda") for _ in range(3))
    q[:, :, 1] *= 4
    q[:, :, 2] *= 100
    k[:, :, 2] = q[:, :, 2]
    for h, big in ((3, 20.0), (4, 60.0)):
        q[0, :, h, 0], k[0, :, h, 0] = (big * (0.5 + 0.5 * torch.rand(2048, device="cuda")) for _ in range(2))
    return tuple(t.to(torch.bfloat16) for t in (q, k, v))


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("f16_wide", [False, True])
def test_gluon_fp8_f16_scores_sharp_heads_and_heads_past_f16(monkeypatch, causal, f16_wide):
    """f16 scores on sharp heads (_sharp_heads), the wide step on every tile or the one-fma step
    with its guard: against float64 (N(0, 1) head; the one-hot head, v's own row to v's rounding)
    and the emulation of the quantisation with f16 raw scores, each element moved by up to its
    slack (P within F16_NEAR_EDGE of an e4m3 rounding edge). The outlier heads stray from the
    emulation by a few % as their row max grows; their error against float64 (e4m3's rounding of
    the outlier channel, 30-90 %) is the emulation's own: held within 5 % of it."""
    from test_fp8 import EMU_LSE_BOUND, F16_EMU_BOUND, F16_NEAR_EDGE, FWD_BOUND, emulate
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}, f16_scores=True, f16_wide=f16_wide))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    q, k, v = _sharp_heads()
    out, lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
    ((q8, qd), (k8, kd), (v8, vd)), f16 = quantized_as_launched(q, k, v, launches)
    (_, c), = launches
    assert f16 and c["F16_WIDE"] == f16_wide
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, dtype=torch.float64)
    assert_close("out vs float64 (N(0, 1) head)", out[:, :, 0], ref[:, :, 0], FWD_BOUND)
    assert_close("out vs float64 (head past f16)", out[:, :, 2], ref[:, :, 2], FWD_BOUND)
    emu, emu_lse, slack = emulate(q8, k8, v8, qd, kd, vd, causal=causal, block_n=c["BLOCK_N"],
                                  last_first=c["DIAG_FIRST"], s_f16=True, near_edge=F16_NEAR_EDGE)
    nearest = emu + (out.double() - emu).clamp(-slack, slack)   # each element moved by up to its slack
    for h in range(q.shape[2]):
        assert_close(f"lse vs fp8 emulation (head {h})", lse[:, h], emu_lse[:, h], EMU_LSE_BOUND)
        if h < 3:
            assert_close(f"out vs fp8 emulation (head {h})", out[:, :, h], nearest[:, :, h], F16_EMU_BOUND)
        else:       # (the outlier heads: no further from float64 than the emulation, give or take)
            err, emu_err = rel_err(out[:, :, h], ref[:, :, h]), rel_err(emu[:, :, h], ref[:, :, h])
            assert 0.2 < emu_err and err <= 1.05 * emu_err, (h, err, emu_err)


def _unaligned(t):
    """t's values in storage 2 bytes off 16-byte alignment: TMA cannot read it."""
    buf = torch.empty(t.numel() + 8, dtype=t.dtype, device=t.device)
    out = buf[1:1 + t.numel()].view(t.shape)
    out.copy_(t)
    return out


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 1024, 1024, 4, 2, 128), (1, 333, 1001, 2, 1, 64), (1, 1, 512, 2, 1, 128)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("schedule", FEW, indirect=True)
def test_gluon_fp8_q_converted_in_the_kernel_bit_for_bit(monkeypatch, schedule, shape, causal):
    """The kernel rounds 16-bit q itself from its amax bits (Q_CONVERT), as quantize_kernel does:
    out and lse bit for bit those of the same q TMA cannot read (2 bytes off alignment), which the
    quantisation launch writes as q8 first; with Q as host-made descriptors or built on the device,
    and three programs that each round many tiles' Q into the same buffers. q is spread so that
    some of it rounds into e4m3's subnormals and one head is all zeros. f16 scores off in both
    (they need Q_CONVERT)."""
    b, sq, sk, hq, hkv, d = shape
    q = (torch.randn(b, sq, hq, d, device="cuda") * torch.logspace(-3, 1, d, device="cuda")).to(torch.bfloat16)
    q[:, :, -1] = 0
    k, v = (torch.randn(b, sk, hkv, d, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule, f16_scores=False))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    results = [fa_ck.flash_attn_fp8_func(x, k, v, causal=causal, return_lse=True, backend="triton")
               for x in (q, _unaligned(q))]
    assert [c["Q_CONVERT"] for _, c in launches] == [True, False]
    assert not any(c["F16_SCORES"] for _, c in launches)
    if "host_desc" in schedule:
        assert all(c["HOST_DESC"] == schedule["host_desc"] for _, c in launches)
    (out, lse), (out8, lse8) = results
    assert torch.isfinite(out).all() and torch.equal(out, out8) and torch.equal(lse, lse8)


@gpu
@pytest.mark.gpu
def test_gluon_fp8_forward_makes_no_q8_where_it_rounds_q(monkeypatch):
    """Where the kernel rounds q, an fp8 forward of 16-bit inputs allocates out, lse, k8, v8 and
    the scales but no fp8 copy of q, on its slow path and on a replay; a q TMA cannot read gets one."""
    b, s, h, d = 4, 4096, 8, 128
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    without_q8 = 2 * q.numel() + 4 * b * h * s + k.numel() + v.numel()      # out, lse, k8, v8 (whole key groups)
    slack = 4 << 20                                                          # the scales, allocator rounding
    monkeypatch.setenv("FA_CK_POISON", "0")      # (poisoned outputs have guards and are cloned)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    for x, convert in ((q, True), (_unaligned(q), False)):
        for _ in range(2):                                                   # the slow path, then a replay
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            out = fa_ck.flash_attn_fp8_func(x, k, v, backend="triton")
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
            del out
            least = without_q8 + (0 if convert else q.numel())
            assert least <= peak <= least + slack, (convert, peak, least)
    assert [c["Q_CONVERT"] for _, c in launches] == [True, False]       # (replays record no launch)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("block_n,window", [(64, None), (128, (200, 37)), (64, (100, 0))])
def test_gluon_fp8_other_blocks_and_windows(monkeypatch, block_n, window):
    """fp8 at 64-key blocks and under sliding windows (key blocks starting past key 0, 1001 keys: a
    padded last group of P's register order), within fp8's bound of float64."""
    from test_fp8 import FWD_BOUND
    q, k, v = _qkv(2, 700, 1001, 4, 2, 128)
    mask = dict(window_size=window) if window else dict(causal=True)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}, block_n=block_n))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    out = fa_ck.flash_attn_fp8_func(q, k, v, backend="triton", **mask)
    assert [c["BLOCK_N"] for _, c in launches] == [block_n]
    ref, _ = reference.attention(q.double(), k.double(), v.double(), dtype=torch.float64,
                                 **(dict(window=window) if window else dict(causal=True)))
    assert_close("fp8 vs float64", out, ref, FWD_BOUND)


@gpu
@pytest.mark.gpu
def test_gluon_fp8_inputs_float32_out(gluon_calls):
    """fp8 tensors with descales and float32 out through the Gluon kernel (v copied into its key
    order): the same numbers as the quantising call (out stored as float32 rather than bf16)."""
    q, k, v = _qkv(2, 300, 300, 2, 2, 128)
    (q8, qd), (k8, kd), (v8, vd) = (tb.quantize_fp8(t, F8) for t in (q, k, v))
    got = fa_ck.flash_attn_fp8_func(q8, k8, fp8.keys_contiguous(v8), causal=True, q_descale=qd, k_descale=kd,
                                    v_descale=vd, out_dtype=torch.float32, backend="triton")
    want = fa_ck.flash_attn_fp8_func(q, k, v, causal=True, backend="triton")
    assert got.dtype == torch.float32 and len(gluon_calls) == 2
    assert torch.equal(got.to(torch.bfloat16), want)


@gpu
@pytest.mark.gpu
def test_gluon_fp8_forward_leaves_unaligned_v_to_forward_py(monkeypatch):
    """A caller's keys-contiguous fp8 v with rows TMA cannot address goes to forward.py as it is;
    fa_ck's own quantisation pads the rows, so its v always can."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    q, k = (torch.randn(1, 1000, 2, 128, device="cuda").to(F8) for _ in range(2))
    v = torch.randn(1, 2, 128, 1000, device="cuda").to(F8).permute(0, 3, 1, 2)   # rows of 1000 B
    out = fa_ck.flash_attn_fp8_func(q, k, v, backend="triton")
    assert not launches and torch.isfinite(out).all()
    fa_ck.flash_attn_fp8_func(q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16), backend="triton")
    assert launches


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_fp8_forward_negative_scale(monkeypatch, causal):
    """fp8 with a negative softmax scale (the descales fold into it): the row max of the scaled
    scores, against the float64 reference within fp8's bound."""
    from test_fp8 import FWD_BOUND
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    q, k, v = _qkv(2, 1000, 1000, 4, 4, 128)
    out = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, softmax_scale=-0.05, backend="triton")
    assert launches and not any(c["RAW_MAX"] for _, c in launches)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, scale=-0.05, dtype=torch.float64)
    assert_close("out vs float64", out, ref, FWD_BOUND)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_fp8_forward_all_zero_heads(monkeypatch, causal):
    """The raw row max on fa_ck's own descales: an all-zero head (descale 1e-12 / 448, its product
    with the scale kept normal) gives the float64 reference's uniform average, not NaN; a caller's
    descales take the raw max too."""
    from test_fp8 import FWD_BOUND
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    q, k, v = _qkv(2, 1000, 1000, 4, 4, 128, scale=3)
    q[0, :, 1] = 0                            # an all-zero head
    k[1, :, 2] = 0
    out = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, backend="triton")
    assert launches and launches[-1][1]["RAW_MAX"] and torch.isfinite(out).all()
    # (the other heads' scores, std 9 at these x3 inputs, make a far sharper softmax than FWD_BOUND is for)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, dtype=torch.float64)
    assert_close("all-zero q head vs float64", out[0, :, 1], ref[0, :, 1], FWD_BOUND)
    assert_close("all-zero k head vs float64", out[1, :, 2], ref[1, :, 2], FWD_BOUND)
    (q8, qd), (k8, kd), (v8, vd) = (tb.quantize_fp8(t, F8) for t in (q, k, v))
    fa_ck.flash_attn_fp8_func(q8, k8, fp8.keys_contiguous(v8), causal=causal, q_descale=qd, k_descale=kd,
                              v_descale=vd, backend="triton")
    assert launches[-1][1]["RAW_MAX"]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_fp8_callers_descales_of_any_sign(monkeypatch, causal):
    """A caller's descales whose product is negative (some heads), zero (one) or positive with both
    negative (one) keep the raw row max: those heads' q rows are negated in the kernel (by the
    producer warp). Against the float64 reference of the dequantised inputs within fp8's bound;
    heads with a negative product differ from the positive descales' output (the sign reached the
    scores)."""
    from test_fp8 import FWD_BOUND
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask({}))
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    q, k, v = _qkv(2, 1000, 1000, 4, 4, 128)
    (q8, qd), (k8, kd), (v8, vd) = (tb.quantize_fp8(t, F8) for t in (q, k, v))
    q_sign = torch.tensor([[1.0, -1.0, 1.0, -1.0], [-1.0, 0.0, 1.0, 1.0]], device="cuda")
    k_sign = torch.tensor([[1.0, 1.0, -1.0, -1.0], [1.0, 1.0, 1.0, -1.0]], device="cuda")
    qs, ks = qd * q_sign, kd * k_sign

    def run(q_descale, k_descale):
        return fa_ck.flash_attn_fp8_func(q8, k8, v8, causal=causal, q_descale=q_descale, k_descale=k_descale,
                                         v_descale=vd, backend="triton")
    plain = run(qd, kd)
    out = run(qs, ks)
    assert launches[-1][1]["RAW_MAX"] and torch.isfinite(out).all()
    deq = [t.double() * d.double()[:, None, :, None] for t, d in ((q8, qs), (k8, ks), (v8, vd))]
    ref, _ = reference.attention(*deq, causal=causal, dtype=torch.float64)
    assert_close("signed descales vs float64", out, ref, FWD_BOUND)
    for b, h in ((q_sign * k_sign) < 0).nonzero().tolist():
        assert rel_err(out[b, :, h].double(), plain[b, :, h].double()) > 0.1


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("seqlen, d, causal", [(4096, 128, False), (4096, 128, True), (4000, 96, True),
                                               (2048, 64, False)])
@pytest.mark.parametrize("schedule", FEW, indirect=True)
def test_q16_early_changes_no_bit(monkeypatch, schedule, seqlen, d, causal):
    """q16_early moves only when the next tile's Q may load (after both warpgroups rounded this one,
    not after their last QK^T): out and lse bit for bit those of the later release, on calls of many
    tiles per persistent program (a Q overwritten while still read would show), full and causal,
    whole and partial blocks, Q through host-made descriptors or built on the device."""
    launches = record_launches(monkeypatch, fast_path, gluon_launch.fwd_gluon_kernel)
    q, k, v = (torch.randn(2, seqlen, 16, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    runs = {}
    for early in (False, True):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", ask(schedule, q16_early=early))
        # (outputs come poisoned with NaN: conftest's FA_CK_POISON)
        runs[early] = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
        c = launches[-1][1]
        assert c["Q16_EARLY"] is early and c["Q_CONVERT"]
    (out, lse), (out_early, lse_early) = runs[False], runs[True]
    assert not out.isnan().any() and not lse.isnan().any()
    assert torch.equal(out_early, out) and torch.equal(lse_early, lse)
