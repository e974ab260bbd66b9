"""Where a Gluon forward tile spends its time (device call 3 of the eighth part: call 2's helper
for the kernel with host-made descriptors, both tensor layouts, timed as kernels.py does too).

Builds an instrumented copy of forward_gluon.py (clock64 / globaltimer reads at the phases of a
tile, stored through the QD pointer, which bf16 calls never read), launches it through the
backend's own launcher, and prints per-phase medians over all tiles. Not part of fa_ck.
    python bench/results/h200-20261130-eighth/call3_timeline.py
"""
import importlib
import pathlib
import sys

import torch

from fa_ck.params import AttnParams

tb = importlib.import_module("fa_ck.backends.triton")
src = pathlib.Path(tb.__file__).with_name("forward_gluon.py").read_text()
SLOTS = 16


def patch(text, anchor, insert, after=True):
    assert text.count(anchor) == 1, anchor
    return text.replace(anchor, anchor + insert if after else insert + anchor)


s = src
s = patch(s, "# The key-block bounds and the score mask", '''@gluon.jit
def _clk():
    return gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=gl.int64, is_pure=False, pack=1)


@gluon.jit
def _gt():
    return gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=gl.int64, is_pure=False, pack=1)


@gluon.jit
def _mark(DBG, tile, slot, t):
    gl.store(DBG.to(gl.pointer_type(gl.int64)) + (gl.program_id(0) * 64 + tile) * 16 + slot, t)


''', after=False)
# consumer: c0 tile start, c1 Q landed, c4 mainloop done, c5 stored (warpgroup 0); g0/g5 globaltimer
s = patch(s, '''    turns = 0
    for u in range(gl.program_id(0), _units(seqlen_q, batch, num_heads, PERSISTENT), gl.num_programs(0)):''', '''    n_t = 0
''', after=False)
s = patch(s, '''            if active:
                m0 = m0 + row0''', '''
                t_c0 = _clk()
                g_c0 = _gt()''')
s = patch(s, '''                    mbarrier.wait(q_full, n_q & 1)''', '''
                    if row0 == 0:
                        _mark(QD, n_t, 1, _clk())''')
s = patch(s, '''                    turns += n_blocks + 1''', '''
                    if row0 == 0:
                        _mark(QD, n_t, 2, _clk())''')
s = patch(s, '''                gl.store(lse_rows + rows, lse, mask=m0 + rows < sq)''', '''
                if row0 == 0:
                    _mark(QD, n_t, 0, t_c0)
                    _mark(QD, n_t, 3, _clk())
                    _mark(QD, n_t, 4, g_c0)
                    _mark(QD, n_t, 5, _gt())
                    _mark(QD, n_t, 6, n_blocks.to(gl.int64))
                n_t += 1''')
# producer: p0 tile start, p1 reuse waits done, p2 descriptors made, p3 all loads issued
s = s.replace('''def _producer(Q, K, V, CU_Q, CU_K,''', '''def _producer(DBG, Q, K, V, CU_Q, CU_K,''')
s = s.replace('''        (_producer, (Q, K, V, CU_Q, CU_K,''', '''        (_producer, (QD, Q, K, V, CU_Q, CU_K,''')
s = patch(s, '''    it = 0                                     # K/V blocks streamed''', '''
    n_t = 0''')
s = patch(s, '''            if n_blocks > 0:
                if HOST_DESC:''', '''            t_p0 = _clk()
''', after=False)
s = patch(s, '''                    _copy(Q, m0, 0, q_full, q_smem, b, h, True)''', '''                    t_p1 = _clk()
                    t_p2 = t_p1
''', after=False)
s = patch(s, '''                    b64 = b.to(gl.int64)
                    hk = (h // group).to(gl.int64)
                    q_desc''', '''                    t_p1 = _clk()
''', after=False)
s = patch(s, '''                    _copy(q_desc, m0, 0, q_full, q_smem, b, h, False)''', '''                    t_p2 = _clk()
''', after=False)
s = patch(s, '''                n_q += 1
                it += n_blocks
''', '''                _mark(DBG, n_t, 8, t_p0)
                _mark(DBG, n_t, 9, t_p1)
                _mark(DBG, n_t, 10, t_p2)
                _mark(DBG, n_t, 11, _clk())
            if active:
                n_t += 1
''')
path = pathlib.Path(tb.__file__).with_name("_fwd_timeline.py")
path.write_text(s)
mod = importlib.import_module("fa_ck.backends.triton._fwd_timeline")


def run(b, s_len, h, d, causal, persistent, host_desc, bhsd, reps=5):
    if bhsd:     # kernels.py's tensors: (B, H, S, D) storage, seen as (B, S, H, D)
        q, k, v = (torch.randn(b, h, s_len, d, dtype=torch.bfloat16, device="cuda").transpose(1, 2) for _ in range(3))
    else:
        q, k, v = (torch.randn(b, s_len, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    p = AttnParams(scale=d ** -0.5, causal=causal, window_right=0 if causal else -1)
    out = torch.empty(b, s_len, h, d, dtype=torch.bfloat16, device="cuda")
    lse = torch.empty(b, h, s_len, dtype=torch.float32, device="cuda")
    n_units = b * h * ((s_len + 255) // 256 if persistent else (s_len + 127) // 128)
    programs = min(n_units, tb._sm_count(q.device)) if persistent else n_units
    dbg = torch.zeros(programs * 64 * SLOTS, dtype=torch.int64, device="cuda")
    dummy = tb._placeholders(q.device)[0]
    cfg = dict(BLOCK_M=128, BLOCK_N=128, num_warps=4, num_stages=2, GLUON=True, PERSISTENT=persistent,
               HOST_DESC=host_desc)
    old = tb.fwd_gluon_kernel
    tb.fwd_gluon_kernel = mod.fwd_gluon_kernel
    try:
        launch = lambda: tb._forward_gluon(q, k, v, out, lse, dummy, dummy, dbg, dbg, dbg, p, cfg, s_len, s_len, h, h,
                                           b, d, tb._scalars(p), 1.0)
        for _ in range(2):
            launch()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            launch()
        e1.record()
        torch.cuda.synchronize()
        ms = e0.elapsed_time(e1) / reps
        from triton.testing import do_bench
        ms_flushed = do_bench(launch, warmup=5, rep=30, return_mode="median")
    finally:
        tb.fwd_gluon_kernel = old
    t = dbg.view(programs, 64, SLOTS).cpu()
    nb = t[:, :, 6]
    used = nb > 0
    c = t[used].double()
    ghz = torch.cuda.get_device_properties(0).clock_rate / 1e6 if hasattr(torch.cuda.get_device_properties(0), "clock_rate") else 1.98
    us = lambda x: float(x.median()) / (ghz * 1e3)
    blocks = c[:, 6]
    main = c[:, 2] - c[:, 1]
    row = dict(shape=f"B{b} S{s_len} H{h} d{d} {'causal' if causal else 'full'} {'persistent' if persistent else 'per-tile'}"
               f" {'host' if host_desc else 'device'}-desc {'bhsd' if bhsd else 'bshd'}",
               ms=ms, ms_flushed=ms_flushed, tiles=int(used.sum()), programs=programs,
               q_wait_us=us(c[:, 1] - c[:, 0]), main_us=us(main), main_per_block_us=us(main / blocks),
               epilogue_us=us(c[:, 3] - c[:, 2]), tile_us=us(c[:, 3] - c[:, 0]),
               prod_reuse_wait_us=us(c[:, 9] - c[:, 8]), prod_desc_us=us(c[:, 10] - c[:, 9]),
               prod_issue_us=us(c[:, 11] - c[:, 10]), gt_tile_us=float((c[:, 5] - c[:, 4]).median()) / 1e3)
    if persistent:   # gap between one tile's end and the next tile's start, same program (clock64)
        gaps = []
        for pr in range(programs):
            rows = t[pr][used[pr]].double()
            if len(rows) > 1:
                gaps.append(rows[1:, 0] - rows[:-1, 3])
        row["gap_us"] = us(torch.cat(gaps)) if gaps else float("nan")
    else:            # per program: launch spread seen by globaltimer
        starts = c[:, 4]
        row["start_spread_us"] = float(starts.max() - starts.min()) / 1e3
    row["ghz"] = ghz
    return row


rows = []
for args in [(16, 1024, 16, 128, False), (16, 1024, 16, 128, True), (64, 1024, 12, 64, True),
             (4, 4096, 16, 128, False)]:
    for sched in [(False, False, False), (True, False, False), (False, True, False), (True, True, False),
                  (False, True, True), (True, True, True)]:
        try:
            r = run(*args, *sched)
        except Exception as e:     # noqa: BLE001 - report and go on
            r = dict(shape=str(args) + str(sched), error=str(e).splitlines()[0][:300])
        rows.append(r)
        print(r, flush=True)
path.unlink()
keys = ["shape", "ms", "ms_flushed", "tiles", "programs", "tile_us", "q_wait_us", "main_us", "main_per_block_us", "epilogue_us",
        "prod_reuse_wait_us", "prod_desc_us", "prod_issue_us", "gap_us", "start_spread_us", "gt_tile_us"]
print("| " + " | ".join(keys) + " |")
print("|" + "---|" * len(keys))
for r in rows:
    print("| " + " | ".join(f"{r.get(k, ''):.3g}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys) + " |")
