"""tile_schedule.py: the host's deal of causal tiles over the Gluon forward's persistent programs
(SCHEDULE). On the CPU: the schedule itself and what the launcher passes; on an sm90 GPU: out and
lse bit for bit those of the kernel's own round-robin."""
import importlib
import json

import pytest
import torch

import fa_ck
from attn_check import record_launches
from conftest import GPU
from fa_ck.params import AttnParams

tile_schedule = importlib.import_module("fa_ck.backends.triton.tile_schedule")
gluon = importlib.import_module("fa_ck.backends.triton.launch_gluon")
plans = importlib.import_module("fa_ck.backends.triton.plans")
configs = importlib.import_module("fa_ck.backends.triton.configs")
SM90 = GPU and torch.cuda.get_device_capability() == (9, 0)


def _round_robin_loads(heads, blocks, programs):
    """The kernel's own deal (forward_gluon_loads._tile: unit u, a pair of query blocks, to program u % P)."""
    n_m = len(blocks)
    per_head = (n_m + 1) // 2
    load = [0] * programs
    for u in range(heads * per_head):
        k = u % per_head
        load[u % programs] += blocks[n_m - 1 - k] + (blocks[k] if k < n_m - 1 - k else 0)
    return load


def test_tile_blocks_are_the_kernels_key_blocks():
    """Causal (bottom-right): query block i of 128 rows sees keys up to its last row's diagonal."""
    assert tile_schedule.tile_blocks(4096, 4096, 128, 128, 0) == tuple(range(1, 33))
    assert tile_schedule.tile_blocks(512, 1024, 128, 128, 0) == (5, 6, 7, 8)       # (512 keys before the queries)
    assert tile_schedule.tile_blocks(1024, 512, 128, 128, 0) == (0, 0, 0, 0, 1, 2, 3, 4)
    assert tile_schedule.tile_blocks(384, 384, 128, 256, 0) == (1, 1, 2)
    assert tile_schedule.tile_blocks(512, 512, 128, 128, 100) == (2, 3, 4, 4)      # (a right window of 100)


@pytest.mark.parametrize("heads, n_m, programs, before, after", [
    (64, 32, 132, 264, 258),        # d128 S4k causal, 4 x 16 heads, the H200's 132 SMs
    (768, 8, 132, 216, 212),        # nanoGPT's 64 x 12 x S1024
    (5, 7, 4, 40, 36),              # odd query blocks (the middle one unpaired), few programs
])
def test_balanced_deals_every_tile_once_and_shortens_the_longest(heads, n_m, programs, before, after):
    blocks = tuple(range(1, n_m + 1))
    assert max(_round_robin_loads(heads, blocks, programs)) == before
    starts, tiles = tile_schedule.balanced(heads, blocks, programs)
    assert len(starts) == programs + 1 and starts[0] == 0 and starts[-1] == len(tiles)
    assert sorted(tiles) == list(range(heads * n_m))          # every tile once
    loads = [sum(blocks[t % n_m] for t in tiles[starts[p]:starts[p + 1]]) for p in range(programs)]
    assert max(loads) == after and sum(loads) == heads * sum(blocks)


def test_balanced_keeps_the_round_robin_where_moving_gains_nothing():
    """Tiles of one weight (full calls), or units as many as programs x rounds (3 x 22 heads at S4k:
    8 units of 33 blocks each): no move shortens the longest program, so no schedule."""
    assert tile_schedule.balanced(64, (16,) * 32, 132) is None
    assert tile_schedule.balanced(66, tuple(range(1, 33)), 132) is None


@pytest.mark.skipif(bool(gluon._GLUON_ERROR), reason="this Triton has no Gluon Hopper API")
@pytest.mark.parametrize("causal, asked, want", [(True, True, True), (True, False, False), (False, True, False)])
def test_schedule_launched_where_asked_and_it_gains(monkeypatch, causal, asked, want):
    """The launcher passes the schedule (SCHEDULED, the int32 tensor in SCHED's place, one program
    per SM) on causal persistent calls where asked and balanced() shortens the longest program;
    else the kernel's own round-robin, its grid as before."""
    launched = []
    monkeypatch.setattr(gluon, "_launch", lambda kernel, grid, args, consts: launched.append((grid, args, consts)))
    monkeypatch.setattr(gluon, "_sm_count", lambda device: 6)
    b, s, h, d = 1, 1024, 4, 128          # 4 heads x 4 pairs of query blocks: 16 units over 6 programs
    q = k = v = torch.randn(b, s, h, d, dtype=torch.bfloat16)
    out, lse, cu = torch.empty(b, s, h, d, dtype=torch.bfloat16), torch.empty(b, h, s), torch.zeros(1, dtype=torch.int32)
    p = AttnParams(scale=0.125, window_left=-1, window_right=0 if causal else -1)
    cfg = {**configs.default("fwd", "cuda:sm90", d, torch.bfloat16, gluon=True),
           **configs.switches("fwd", "cuda:sm90", d, False), "SCHEDULE": asked}
    scal = dict(scale_log2=0.1, window_left=-1, window_right=0 if causal else -1)
    gluon._forward_gluon(q, k, v, out, lse, cu, cu, cu, cu, cu, p, cfg, s, s, h, h, b, d, scal, 1.0)
    (grid, args, consts), = launched
    assert consts["SCHEDULED"] is want and grid[0] == 6
    sched = args[11]
    if want:
        blocks = tile_schedule.tile_blocks(s, s, 128, cfg["BLOCK_N"], 0)
        starts, tiles = tile_schedule.balanced(h, blocks, 6)
        assert sched.dtype == torch.int32 and sched.tolist() == list(starts + tiles)
    else:
        assert sched is cu


# ---------------------------------------------------------------------------- on an sm90 GPU

@pytest.mark.skipif(not SM90 or bool(gluon._GLUON_ERROR), reason="needs an sm90 GPU and Gluon")
@pytest.mark.gpu
@pytest.mark.parametrize("batch, seqlen, heads, d, fp8", [(4, 4096, 16, 128, False), (4, 4096, 16, 128, True),
                                                          (64, 1024, 12, 64, False), (3, 4000, 7, 64, True)])
def test_schedule_changes_no_bit(monkeypatch, batch, seqlen, heads, d, fp8):
    """Causal calls with SCHEDULE against the kernel's own round-robin: the schedule reached the
    kernel, and out and lse are bit for bit the same (each tile computed as before, only by
    another program), on the slow path and on the plan's replay (the schedule a constant there)."""
    launches = record_launches(monkeypatch, plans, importlib.import_module(
        "fa_ck.backends.triton.forward_gluon").fwd_gluon_kernel)
    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, seqlen, heads, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    fn = fa_ck.flash_attn_fp8_func if fp8 else fa_ck.flash_attn_func
    runs = {}
    for asked in (False, True):
        monkeypatch.setenv("FA_CK_TRITON_CONFIG", json.dumps({"fwd": {"SCHEDULE": asked}}))
        runs[asked] = [fn(q, k, v, causal=True, return_lse=True, backend="triton") for _ in range(2)]
        assert launches[-1][1]["SCHEDULED"] is asked
    (out, lse), _ = runs[False]
    assert not out.isnan().any() and not lse.isnan().any()
    for out_s, lse_s in runs[True]:
        assert torch.equal(out_s, out) and torch.equal(lse_s, lse)
