"""The triton backend's KV-cache decoding (kernels/decode.py through kvcache_forward) against the float64
reference on each batch row's visible keys, gathered from the cache here; and config.decode_config.

Caches hold NaN wherever a row's visible keys are not (before leftpad, past seqlens_k, pages no row
uses, cache rows batch_idx skips), so a stray read shows up as NaN; outputs start as NaN
(FA_CK_POISON=1, tests/conftest.py), so an element left unwritten does too. Every element is compared."""
import dataclasses
import importlib
import itertools
import json

import pytest
import torch

import fake_sm90
from conftest import DEVICE
from fa_ck import reference
from fa_ck.params import KVCacheParams

tb = importlib.import_module("fa_ck.backends.triton")
config = importlib.import_module("fa_ck.backends.triton.config")
decode_host = importlib.import_module("fa_ck.backends.triton.decode_host")

F16, BF16 = torch.float16, torch.bfloat16
# (atol, rtol) of out against float64: P is rounded to the input dtype before P @ V, out to it after
OUT_TOL = {F16: (4e-3, 4e-3), BF16: (3e-2, 2e-2)}
LSE_TOL = (1e-3, 1e-3)


@dataclasses.dataclass
class Case:
    b: int
    sq: int
    hq: int
    hkv: int
    d: int
    dtype: torch.dtype
    seqlens: list
    leftpad: list | None = None
    page: int = 0                 # 0: a dense cache
    cache_len: int = 0            # keys a row's cache holds (0: the longest row, rounded up to 16)
    batch_idx: bool = False
    causal: bool = False
    window: tuple = (-1, -1)
    softcap: float = 0.0
    alibi: str = ""               # "h": slopes (Hq,); "bh": (B, Hq); "bh-t": (B, Hq) with heads strided
    scale: float | None = None
    num_splits: int = 0
    overrides: dict | None = None


def build(c: Case):
    """-> (q, k_cache, v_cache, p, keys, values): the call, and each row's visible keys and values."""
    seq = torch.tensor(c.seqlens, dtype=torch.int32)
    left = torch.tensor(c.leftpad, dtype=torch.int32) if c.leftpad is not None else torch.zeros_like(seq)
    cap = c.cache_len or -(-max(c.seqlens) // 16) * 16
    if c.page:
        cap = -(-cap // c.page) * c.page
    rows_k, rows_v = (torch.randn(c.b, cap, c.hkv, c.d, dtype=c.dtype) for _ in range(2))
    for r in range(c.b):                     # nothing outside [leftpad, seqlens_k) may be read
        for t in (rows_k, rows_v):
            t[r, :left[r]] = float("nan")
            t[r, seq[r]:] = float("nan")
    keys = [rows_k[r, left[r]:seq[r]] for r in range(c.b)]
    values = [rows_v[r, left[r]:seq[r]] for r in range(c.b)]
    table, batch_idx = None, None
    if c.page:                               # the rows' pages, shuffled among spare pages of NaN
        per_row = cap // c.page
        pages = torch.randperm(c.b * per_row + 5)
        table = pages[:c.b * per_row].view(c.b, per_row).to(torch.int32)
        table = torch.cat([table, pages[-3:].expand(c.b, 3).to(torch.int32)], 1)[:, :per_row]   # (a row stride)
        k_cache, v_cache = (torch.full((len(pages), c.page, c.hkv, c.d), float("nan"), dtype=c.dtype) for _ in range(2))
        k_cache[table.flatten().long()] = rows_k.view(-1, c.page, c.hkv, c.d)
        v_cache[table.flatten().long()] = rows_v.view(-1, c.page, c.hkv, c.d)
    elif c.batch_idx:                        # the rows among twice as many cache rows of NaN
        batch_idx = torch.randperm(2 * c.b)[:c.b].to(torch.int32)
        k_cache, v_cache = (torch.full((2 * c.b, cap, c.hkv, c.d), float("nan"), dtype=c.dtype) for _ in range(2))
        k_cache[batch_idx.long()], v_cache[batch_idx.long()] = rows_k, rows_v
    else:
        k_cache, v_cache = rows_k, rows_v
    right = c.window[1]
    if c.causal:
        right = 0 if right < 0 else min(right, 0)
    slopes = {"": None, "h": torch.rand(c.hq) * 0.5, "bh": torch.rand(c.b, c.hq) * 0.5,
              "bh-t": (torch.rand(c.hq, c.b) * 0.5).t()}[c.alibi]
    on = {"device": DEVICE}
    p = KVCacheParams(scale=c.scale or c.d ** -0.5, seqlens_k=seq.to(**on), causal=c.causal, window_left=c.window[0],
                      window_right=right, alibi_slopes=None if slopes is None else slopes.to(**on), softcap=c.softcap,
                      leftpad=None if c.leftpad is None else left.to(**on),
                      batch_idx=None if batch_idx is None else batch_idx.to(**on),
                      block_table=None if table is None else table.to(**on), num_splits=c.num_splits)
    q = torch.randn(c.b, c.sq, c.hq, c.d, dtype=c.dtype)
    return q.to(**on), k_cache.to(**on), v_cache.to(**on), p, keys, values


def expected(q, p: KVCacheParams, keys, values):
    """float64 reference.attention of each batch row on its visible keys -> (out, lse)."""
    outs, lses = [], []
    for r, (k, v) in enumerate(zip(keys, values)):
        slopes = p.alibi_slopes
        if slopes is not None and slopes.dim() == 2:
            slopes = slopes[r]
        o, lse = reference.attention(q[r:r + 1].cpu(), k[None], v[None], scale=p.scale,
                                     window=(p.window_left, p.window_right),
                                     alibi_slopes=None if slopes is None else slopes.cpu(), softcap=p.softcap,
                                     dtype=torch.float64, out_dtype=torch.float64)
        outs.append(o)
        lses.append(lse)
    return torch.cat(outs), torch.cat(lses)


def run_and_check(c: Case, monkeypatch):
    if c.overrides:
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"decode": c.overrides}))
    q, k_cache, v_cache, p, keys, values = build(c)
    assert tb.kvcache_unsupported(q, k_cache, v_cache, p) is None
    out, lse = tb.kvcache_forward(q, k_cache, v_cache, p)
    ref_out, ref_lse = expected(q, p, keys, values)
    assert out.dtype == c.dtype and out.shape == q.shape
    assert lse.dtype == torch.float32 and lse.shape == (c.b, c.hq, c.sq)
    empty = ref_lse == float("-inf")         # (B, Hq, Sq): rows that see no key
    assert torch.equal(lse.cpu() == float("-inf"), empty), "rows that see no key: lse -inf there, and only there"
    assert (out.cpu().transpose(1, 2)[empty] == 0).all(), "rows that see no key: out 0"
    atol, rtol = OUT_TOL[c.dtype]
    torch.testing.assert_close(out.cpu().double(), ref_out, atol=atol, rtol=rtol)
    torch.testing.assert_close(lse.cpu().double(), ref_lse, atol=LSE_TOL[0], rtol=LSE_TOL[1])
    return decode_host.decode_config(decode_host.decode_spec(q, k_cache, p))


CASES = {
    # dense caches: MHA, GQA, MQA, splits 1 / 3, head dims 64, 128 and 59
    "dense-mha-f16-d64": Case(2, 1, 4, 4, 64, F16, [37, 100]),
    "dense-gqa-bf16-d128-split3": Case(2, 4, 8, 2, 128, BF16, [70, 129], num_splits=3),
    "dense-mqa-f16-d59-split3": Case(1, 4, 8, 1, 59, F16, [90], num_splits=3),
    "dense-bf16-d96-causal": Case(2, 4, 4, 2, 96, BF16, [33, 80], causal=True),
    # paged: pages of 16 gathered key by key (32 keys per block), 64 and 256 read whole
    "paged16-gqa-split3": Case(3, 1, 8, 2, 64, F16, [1, 50, 97], page=16, num_splits=3),
    "paged64-bf16-d96-causal": Case(2, 4, 4, 2, 96, BF16, [64, 150], page=64, causal=True),
    "paged256-mqa-split3": Case(2, 1, 4, 1, 64, F16, [300, 20], page=256, num_splits=3),
    "paged16-block16": Case(2, 2, 4, 2, 64, F16, [40, 77], page=16, overrides={"block_n": 16}),
    "paged64-block128": Case(2, 2, 4, 2, 64, BF16, [100, 200], page=64, num_splits=3, overrides={"block_n": 128}),
    # masks and features
    "causal-more-queries-than-keys": Case(2, 4, 4, 2, 64, F16, [2, 30], causal=True),
    "window-left-causal-split3": Case(2, 4, 4, 2, 64, F16, [50, 100], window=(8, 0), num_splits=3),
    "window-both": Case(2, 4, 4, 4, 64, BF16, [60, 45], window=(5, 3)),
    "softcap": Case(2, 2, 4, 2, 64, F16, [40, 70], softcap=5.0, scale=0.3),
    "alibi-h-causal": Case(2, 4, 8, 2, 64, F16, [40, 70], alibi="h", causal=True),
    "alibi-bh-window-paged": Case(2, 2, 4, 2, 64, BF16, [55, 90], alibi="bh", window=(20, 0), page=16),
    "alibi-bh-strided-split3": Case(2, 1, 4, 2, 64, F16, [30, 64], alibi="bh-t", num_splits=3),
    "leftpad-causal-split3": Case(2, 4, 4, 2, 64, F16, [40, 90], leftpad=[3, 20], causal=True, num_splits=3),
    "batch_idx-split3": Case(2, 1, 4, 2, 128, BF16, [50, 33], batch_idx=True, num_splits=3),
    "empty-rows-split3": Case(3, 2, 4, 2, 64, F16, [5, 0, 40], leftpad=[5, 0, 7], num_splits=3),
    # many queries: several tiles of packed rows
    "sq130-gqa-causal": Case(1, 130, 2, 1, 64, F16, [200], causal=True),
    "sq130-mha-split3-bf16": Case(1, 130, 1, 1, 64, BF16, [150], num_splits=3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_decode_matches_the_reference(name, monkeypatch):
    run_and_check(CASES[name], monkeypatch)


def test_chosen_splits_match_the_reference(monkeypatch):
    """num_splits 0: decode_config chooses from the cache's capacity (1024 keys: 4 splits here)."""
    cfg = run_and_check(Case(2, 1, 4, 2, 64, BF16, [700, 1000], cache_len=1024), monkeypatch)
    assert cfg.num_splits > 1


def test_decode_never_reads_device_values(monkeypatch):
    """On a (faked) GPU the host code never reads a tensor's values: no sync. The launches are what
    decode_config returns."""
    log = fake_sm90.install(monkeypatch)
    q, k_cache, v_cache, p, _, _ = build(Case(1, 1, 32, 8, 128, BF16, [1], cache_len=32768, page=16))
    with monkeypatch.context() as m:
        for name in ("item", "tolist", "__bool__", "__int__", "__index__", "__float__", "cpu", "numpy"):
            m.setattr(torch.Tensor, name, lambda *a, _n=name, **k: pytest.fail(f"the host read a tensor ({_n})"))
        tb.kvcache_forward(q, k_cache, v_cache, p)
    cfg = decode_host.decode_config(decode_host.decode_spec(q, k_cache, p))
    assert cfg.num_splits > 1
    (grid, _, split), = fake_sm90.launched(log, "decode_split_kernel")
    assert grid == (8, cfg.row_tiles, cfg.num_splits)
    assert (split["BLOCK_M"], split["BLOCK_N"], split["num_warps"], split["num_stages"], split["PAGE"]) == (
        cfg.block_m, cfg.block_n, cfg.num_warps, cfg.num_stages, 16)
    (grid, _, combine), = fake_sm90.launched(log, "decode_combine_kernel")
    assert grid == (1, 32, 1) and combine["BLOCK_S"] == cfg.combine_block_s


# ---------------------------------------------------------------------------------- decode_config

def _spec(**kw) -> "config.DecodeSpec":
    base = dict(arch="cuda:sm90", dtype=BF16, head_dim=128, batch=1, seqlen_q=1, heads_q=32, heads_kv=8,
                capacity=131072)
    return config.DecodeSpec(**{**base, **kw})


GRID = dict(arch=["interpreter", "hip:gfx942", "cuda:sm90", "cuda:sm80"], head_dim=[59, 64, 128, 256],
            seqlen_q=[1, 4, 130], heads=[(32, 8), (8, 8), (32, 1)], batch=[1, 8, 64], capacity=[16, 1024, 131072],
            page_size=[0, 16, 256], num_splits=[0, 3, 100000])


def pow2(n: int) -> bool:
    return n > 0 and not n & (n - 1)


def test_every_config_decode_config_returns_is_valid():
    for values in itertools.product(*GRID.values()):
        kw = dict(zip(GRID, values))
        hq, hkv = kw.pop("heads")
        spec = _spec(**kw, heads_q=hq, heads_kv=hkv)
        cfg = config.decode_config(spec)
        assert config.decode_config(dataclasses.replace(spec)) is cfg           # memoised on an equal spec
        where = f"{spec} -> {cfg}"
        assert pow2(cfg.block_m) and pow2(cfg.block_n) and cfg.block_m >= 16 and cfg.block_n >= 16, where
        assert cfg.num_warps in (1, 2, 4, 8, 16) and cfg.num_stages >= 1 and cfg.combine_warps >= 1, where
        assert cfg.row_tiles == -(-spec.rows // cfg.block_m) and cfg.row_tiles <= 65535, where
        assert cfg.whole_pages == (spec.page_size >= cfg.block_n), where
        assert 1 <= cfg.num_splits <= config.DECODE_GRID_Z, where
        blocks = -(-spec.capacity // cfg.block_n)
        if spec.num_splits:                  # the caller's, less splits that could only be empty
            assert cfg.num_splits == min(spec.num_splits, blocks), where
        else:
            assert cfg.num_splits <= max(1, spec.capacity // config.DECODE_SPLIT_KEYS), where
        assert pow2(cfg.combine_block_s) and cfg.combine_block_s <= 16, where
        assert cfg.combine_block_s <= max(1, 2 * cfg.num_splits - 1), where


def _fill(spec, cfg) -> float:
    """How full the last round of resident split programs is."""
    n = spec.batch * spec.heads_kv * cfg.row_tiles * cfg.num_splits
    slots = spec.sm_count * config.DECODE_RESIDENT["hip" if spec.arch.startswith("hip") else "cuda"]
    return n / (-(-n // slots) * slots)


@pytest.mark.parametrize("arch", ["cuda:sm90", "hip:gfx942"])
@pytest.mark.parametrize("batch,capacity", [(1, 131072), (1, 8192), (8, 8192), (64, 8192), (64, 32768), (256, 4096)])
def test_chosen_splits_fill_the_gpu(arch, batch, capacity):
    """Chosen splits fill the last round of programs, and fewer splits would not; or, where the
    cache's keys allow too few splits for that, as many as they allow."""
    spec = _spec(arch=arch, batch=batch, capacity=capacity, sm_count=304 if arch.startswith("hip") else 132)
    cfg = config.decode_config(spec)
    most = capacity // config.DECODE_SPLIT_KEYS
    assert _fill(spec, cfg) >= config.DECODE_ROUND_FILL or cfg.num_splits == most
    for fewer in range(1, cfg.num_splits):
        assert _fill(spec, dataclasses.replace(cfg, num_splits=fewer)) < config.DECODE_ROUND_FILL


def test_chosen_splits_keep_enough_keys_and_the_callers_count():
    assert config.decode_config(_spec(capacity=512)).num_splits == 2                # few keys: few splits
    assert config.decode_config(_spec(capacity=100)).num_splits == 1
    assert config.decode_config(_spec(num_splits=5)).num_splits == 5               # the caller's
    assert config.decode_config(_spec(num_splits=5, capacity=100)).num_splits == 2     # (2 blocks of 64 keys)


def test_decode_configs_are_frozen_and_the_spec_is_their_whole_key():
    spec = _spec()
    cfg = config.decode_config(spec)
    for frozen in (spec, cfg):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(frozen, dataclasses.fields(frozen)[0].name, None)
    for f in dataclasses.fields(config.DecodeSpec):
        value = getattr(spec, f.name)
        other = (not value if type(value) is bool else value + 1 if type(value) is int else
                 value + "x" if type(value) is str else torch.float16)
        assert dataclasses.replace(spec, **{f.name: other}) != spec, f.name


def test_an_override_reaches_the_decode_config():
    asked = {"block_m": 32, "block_n": 128, "num_warps": 8, "num_stages": 2, "num_splits": 7}
    cfg = config.decode_config(_spec(overrides=json.dumps({"decode": asked})))
    assert {name: getattr(cfg, name) for name in asked} == asked
    assert config.knobs(config.DecodeConfig) == tuple(asked)


@pytest.mark.parametrize("asked,match", [
    ({"tile": 64}, r"unknown keys \['tile'\]"),
    ({"num_splits": "4"}, "num_splits must be an integer"),
    ({"block_n": 48}, "block_n must be a power of two"),
    ({"block_m": 8}, "block_m must be 16 or more"),
    ({"num_splits": 0}, "num_splits must be 1 to"),
    ({"num_warps": 3}, "num_warps must be a power of two"),
])
def test_decode_overrides_are_checked_against_the_fields(asked, match):
    with pytest.raises(ValueError, match=match):
        config.decode_config(_spec(overrides=json.dumps({"decode": asked})))


@pytest.mark.parametrize("change,match", [
    (dict(dtype=torch.float32), "dtype torch.float32"),
    (dict(cache_dtype=torch.float8_e4m3fn), "fp8 caches"),
    (dict(page=8), "page size 8"),
    (dict(page=48), "page size 48"),
    (dict(d=512), "head_dim 512"),
])
def test_what_the_decode_kernels_cannot_serve(change, match):
    d, page = change.get("d", 64), change.get("page", 0)
    on = {"device": DEVICE}
    q = torch.randn(1, 1, 4, d, dtype=change.get("dtype", F16), **on)
    shape = (4, page, 2, d) if page else (1, 64, 2, d)
    cache = torch.zeros(shape, dtype=change.get("cache_dtype", F16), **on)
    table = torch.zeros(1, 4, dtype=torch.int32, **on) if page else None
    p = KVCacheParams(scale=1.0, seqlens_k=torch.ones(1, dtype=torch.int32, **on), block_table=table)
    why = tb.kvcache_unsupported(q, cache, cache, p)
    assert why is not None and match in why, why
