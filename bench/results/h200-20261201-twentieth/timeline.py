"""Where a short forward's tiles spend their time: clock64 marks at the phases of each tile of the
Gluon forward, both consumer warpgroups and the producer warp (an instrumented copy of
forward_gluon.py; marks stored through the QD pointer, which 16-bit calls never read). Per
shape: median microseconds per phase, grouped by the tile's key blocks. Not part of fa_ck.
Points and switch variants may come from the environment (h200-20261202-d256 call 1):
POINTS='[[B, H, S, D, causal, "FA_CK_TRITON_CONFIG JSON"], ...]'.
    python3 bench/results/h200-20261201-twentieth/timeline.py"""
import importlib, json, os, pathlib
import torch
import fa_ck
from fa_ck.backends.triton import launch_gluon

src = pathlib.Path(launch_gluon.__file__).with_name("forward_gluon.py").read_text()
TMAX, SLOTS = 128, 64


def patch(text, anchor, insert, after=True):
    assert text.count(anchor) == 1, anchor
    return text.replace(anchor, anchor + insert if after else insert + anchor)


s = patch(src, "@gluon.constexpr_function\ndef _log2", '''@gluon.jit
def _clk():
    return gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=gl.int64, is_pure=False, pack=1)


@gluon.jit
def _gt():
    return gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=gl.int64, is_pure=False, pack=1)


@gluon.jit
def _mark(DBG, tile, slot, t):
    gl.store(DBG.to(gl.pointer_type(gl.int64)) + (gl.program_id(0) * 128 + tile) * 64 + slot, t)


@gluon.jit
def _wmark(DBG, tile, slot):
    # each warp's own clock (lane 0's) at slot + warp (a scalar store is one thread's)
    idx = gl.arange(0, 128, layout=gl.BlockedLayout([1], [32], [4], [0]))
    t = gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [idx], dtype=gl.int64, is_pure=False, pack=1)
    gl.store(DBG.to(gl.pointer_type(gl.int64)) + (gl.program_id(0) * 128 + tile) * 64 + slot + idx // 32, t,
             mask=idx % 32 == 0)


''', after=False)
# consumers (slot base 0 for warpgroup 0, 5 for warpgroup 1): start, Q landed, loop done, epilogue done, blocks
s = patch(s, '''    turns = 0
    for u in range(gl.program_id(0), _units(seqlen_q, batch, num_heads, PERSISTENT), gl.num_programs(0)):''', '''
    n_t = 0
    SB: gl.constexpr = row0 // 64 * 5
''', after=False)
s = patch(s, '''            if active:
                m0 = m0 + row0''', '''
                t_c0 = _clk()
                g_c0 = _gt()
                t_c1 = t_c0
                t_c2 = t_c0''')
s = patch(s, '''                    mbarrier.wait(q_full, n_q & 1)''', '''
                    t_c1 = _clk()''')
s = patch(s, '''                    turns += n_blocks + 1''', '''
                    t_c2 = _clk()''')
s = patch(s, '''                gl.store(lse_rows + rows, lse, mask=m0 + rows < sq)''', '''
                _mark(QD, n_t, SB + 0, t_c0)
                _mark(QD, n_t, SB + 1, t_c1)
                _mark(QD, n_t, SB + 2, t_c2)
                _mark(QD, n_t, SB + 3, _clk())
                _mark(QD, n_t, SB + 4, n_blocks.to(gl.int64))
                if row0 == 0:
                    _mark(QD, n_t, 13, g_c0)
                    _mark(QD, n_t, 14, _gt())
                n_t += 1''')
# producer: slot 10 tile start, 11 Q's buffer free (q_empty), 12 all loads issued
s = s.replace("def _producer(Q, K, V, CU_Q, CU_K,", "def _producer(DBG, Q, K, V, CU_Q, CU_K,")
s = s.replace("        (_producer, (Q, K, V, CU_Q, CU_K,", "        (_producer, (QD, Q, K, V, CU_Q, CU_K,")
s = patch(s, '''    it = 0                                     # K/V blocks streamed''', '''
    n_t = 0''')
s = patch(s, '''                if HOST_DESC:
                    if n_q > 0:
                        mbarrier.wait(q_empty, (n_q - 1) & 1)''', '''
                    t_p1 = _clk()''')
s = patch(s, '''                if HOST_DESC:
                    if n_q > 0:''', '''                t_p0 = _clk()
                t_p1 = t_p0
''', after=False)
s = patch(s, '''                    _stream_kv(K, V, k_smem, v_smem, k_full, v_full, k_empty, v_empty, lo, n_blocks, FP8, it, b,
                               h // group, True)''', '''
                    _mark(DBG, n_t, 10, t_p0)
                    _mark(DBG, n_t, 11, t_p1)
                    _mark(DBG, n_t, 12, _clk())
                    n_t += 1''')
s = s.replace("            V_KEYS_MAJOR: gl.constexpr, RAW_MAX: gl.constexpr, P_REGS: gl.constexpr):",
              "            V_KEYS_MAJOR: gl.constexpr, RAW_MAX: gl.constexpr, P_REGS: gl.constexpr, DBG=None, n_t=0, "
              "AB: gl.constexpr = 16):")
s = s.replace("                                            PINGPONG, P_SCALE, FP8, RAW_MAX, P_REGS)",
              "                                            PINGPONG, P_SCALE, FP8, RAW_MAX, P_REGS, QD, n_t, 16 + SB // 5 * 8)")
for anchor, slot in (("    mbarrier.wait(k_full.index(buf), (it // NUM_BUF) & 1)", 0),
                     ("    qk = warpgroup_mma_wait(0, deps=[qk])", 1),
                     ("    mbarrier.arrive(k_empty.index(buf), count=1)\n    p, alpha", 2),
                     ("    p = _p_operand(p, p_smem, dtype, p_layout, P_REGS)", 3),
                     ("    mbarrier.arrive(q_empty, count=1)         # the tile's QK^T are done: the producer may load the next Q", 4),
                     ("    mbarrier.arrive(v_empty.index(last), count=1)", 5)):
    if slot == 2:    # after the arrive, before the softmax
        s = s.replace(anchor, "    mbarrier.arrive(k_empty.index(buf), count=1)\n    _wmark(DBG, n_t, AB + 8)\n    p, alpha")
    else:
        s = patch(s, anchor, f"\n    _wmark(DBG, n_t, AB + {slot * 4})")
path = pathlib.Path(launch_gluon.__file__).with_name("_fwd_timeline.py")
path.write_text(s)
mod = importlib.import_module("fa_ck.backends.triton._fwd_timeline")
orig_launch = launch_gluon._launch
DBG = {}


def traced_launch(kernel, grid, args, constexprs):
    if kernel is launch_gluon.fwd_gluon_kernel:
        dbg = torch.zeros(grid[0] * TMAX * SLOTS, dtype=torch.int64, device="cuda")
        DBG["buf"], DBG["grid"] = dbg, grid[0]
        args = (*args[:8], dbg, *args[9:])
        kernel = mod.fwd_gluon_kernel
    return orig_launch(kernel, grid, args, constexprs)


launch_gluon._launch = traced_launch


MARKS = ["k0", "qk0", "arrive", "softmax0", "loop", "pv_last"]


def per_warp(sel, us):
    """warpgroup 0's marks by warp: each interval's median over tiles (the slowest warp's, and
    the spread between warps at each mark)."""
    m = {name: sel[:, 16 + 4 * i:20 + 4 * i] for i, name in enumerate(MARKS)}
    out = {}
    for a, b in zip(MARKS, MARKS[1:]):
        d = m[b] - m[a]
        out[f"{b}_slowest"] = us(d.max(1).values)
        out[f"{b}_fastest"] = us(d.min(1).values)
    for name in MARKS:
        out[f"spread_{name}"] = us(m[name].max(1).values - m[name].min(1).values)
    return out


def run(B, H, S, D, causal, cfg=""):
    os.environ["FA_CK_TRITON_CONFIG"] = cfg
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, S, H, D, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    DBG.pop("buf", None)
    for _ in range(3):     # first call: the slow path (records), later ones replay with the same buffer
        out = fa_ck.flash_attn_func(q, k, v, causal=causal)
        torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v)), is_causal=causal)
    err = float((out.transpose(1, 2).float() - ref.float()).norm() / ref.float().norm())
    t = DBG["buf"].view(DBG["grid"], TMAX, SLOTS).cpu().double()
    nb = t[:, :, 4]
    used = nb > 0
    c = t[used]
    ghz = float(((c[:, 3] - c[:, 0]) / (c[:, 14] - c[:, 13])).median())
    us = lambda x: float(x.median()) / (ghz * 1e3)
    row = {"shape": f"B{B} H{H} S{S} d{D} {'causal' if causal else 'full'} {cfg}", "tiles": int(used.sum()),
           "programs": DBG["grid"], "ghz": ghz, "err_vs_sdpa": err, "by_blocks": {}}
    # per program: the gap between a tile's epilogue end and the next tile's start (warpgroup 0)
    gaps = torch.cat([t[p][used[p]][1:, 0] - t[p][used[p]][:-1, 3] for p in range(DBG["grid"]) if used[p].sum() > 1])
    span = torch.stack([t[p][used[p]][-1, 3] - t[p][used[p]][0, 0] for p in range(DBG["grid"]) if used[p].any()])
    row["gap_us"], row["program_span_us_median"], row["program_span_us_max"] = us(gaps), us(span), float(span.max()) / (ghz * 1e3)
    for n in sorted(set(int(x) for x in c[:, 4].tolist())):
        sel = c[c[:, 4] == n]
        row["by_blocks"][n] = {
            "tiles": len(sel),
            "tile_us_wg0": us(sel[:, 3] - sel[:, 0]), "tile_us_wg1": us(sel[:, 8] - sel[:, 5]),
            "q_wait_wg0": us(sel[:, 1] - sel[:, 0]), "q_wait_wg1": us(sel[:, 6] - sel[:, 5]),
            "loop_wg0": us(sel[:, 2] - sel[:, 1]), "loop_wg1": us(sel[:, 7] - sel[:, 6]),
            "epilogue_wg0": us(sel[:, 3] - sel[:, 2]), "epilogue_wg1": us(sel[:, 8] - sel[:, 7]),
            # the producer's Q issue against the consumers' tile start (negative: issued before)
            "q_issue_after_start": us(sel[:, 11] - sel[:, 0]),
            "q_landed_after_issue": us(sel[:, 1] - sel[:, 11]),
            "prod_q_free_wait": us(sel[:, 11] - sel[:, 10]),
            **per_warp(sel, us),
        }
    return row


POINTS = json.loads(os.environ.get("POINTS", "null")) or [
    (32, 32, 512, 64, False), (32, 32, 512, 64, True), (64, 12, 1024, 64, True), (32, 16, 512, 128, True)]
rows = []
for pt in POINTS:
    try:
        r = run(*pt)
    except Exception as e:
        r = {"shape": str(pt), "error": f"{type(e).__name__}: {str(e)[:400]}"}
    rows.append(r)
    print(json.dumps(r), flush=True)
path.unlink()
json.dump(rows, open(os.environ.get("OUT", "/tmp") + "/timeline.json", "w"), indent=1)
cols = ["tiles", "tile_us_wg0", "q_wait_wg0", "loop_wg0", "epilogue_wg0", "q_issue_after_start",
        "q_landed_after_issue", "prod_q_free_wait", "qk0_slowest", "qk0_fastest", "arrive_slowest",
        "arrive_fastest", "softmax0_slowest", "softmax0_fastest", "spread_k0", "spread_qk0", "spread_arrive",
        "spread_softmax0", "loop_slowest", "pv_last_slowest"]
print("\n| shape | blocks | " + " | ".join(cols) + " |\n|" + "---|" * (len(cols) + 2))
for r in rows:
    if "error" in r:
        print(f"| {r['shape']} | {r['error'][:100]} |")
        continue
    print(f"| {r['shape']} | gap between tiles {r['gap_us']:.2f} us, program span median {r['program_span_us_median']:.1f}"
          f" max {r['program_span_us_max']:.1f} us, {r['ghz']:.2f} GHz |")
    for n, d in r["by_blocks"].items():
        print(f"| {r['shape']} | {n} | " + " | ".join(f"{d[c]:.2f}" if isinstance(d[c], float) else str(d[c]) for c in cols) + " |")
    print(f"| {r['shape']} | all | gap {r['gap_us']:.2f} us, program span median {r['program_span_us_median']:.1f} / max "
          f"{r['program_span_us_max']:.1f} us, {r['programs']} programs, {r['ghz']:.2f} GHz, err {r['err_vs_sdpa']:.1e} |")
