"""Where the Gluon forward's key-block loop spends its time, per consumer warpgroup and block:
do the two warpgroups' softmaxes run under each other's multiplies, or in step?

Builds an instrumented copy of forward_gluon.py (clock64 marks in _attend's loop, stored through
the CU_Q pointer, which non-varlen calls never read), swaps it in for launch_gluon's kernel and
runs fa_ck's public forward under FA_CK_TRITON_CONFIG variants. Per block j of each program's
first tile (j = 1..NB-1), per warpgroup: s0 ring barriers passed (K_j, V_{j-1}), s1 QK^T_j and
PV_{j-1} issued (with PINGPONG: after its turn), s2 S_j landed, s3 softmax(S_j) done, s4 the PV
multiply done. Not part of fa_ck.
    python3 bench/results/h200-20261203-timeline/timeline.py [--out DIR]
"""
import argparse
import importlib
import json
import os
import pathlib

import torch

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")
lg = importlib.import_module("fa_ck.backends.triton.launch_gluon")
plans = importlib.import_module("fa_ck.backends.triton.plans")
src_path = pathlib.Path(tb.__file__).with_name("forward_gluon.py")
NB = 64          # blocks recorded per tile
SLOTS = 8        # s0..s4, globaltimer at s0


def patch(text, anchor, insert, after=True):
    assert text.count(anchor) == 1, anchor
    return text.replace(anchor, anchor + insert if after else insert + anchor)


def sub(text, old, new):
    assert text.count(old) == 1, old
    return text.replace(old, new)


def instrumented():
    s = src_path.read_text()
    s = patch(s, "@gluon.jit\ndef _take_turn(", '''@gluon.jit
def _clk():
    return gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=gl.int64, is_pure=False, pack=1)


@gluon.jit
def _gt():
    return gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=gl.int64, is_pure=False, pack=1)


@gluon.jit
def _mark(DBG, base, j, slot, t, rec):
    gl.store(DBG.to(gl.pointer_type(gl.int64)) + (base + j) * 8 + slot, t, mask=rec & (j < 64))


''', after=False)
    s = s.replace("def _attend(q_smem, k_smem,", "def _attend(DBG, q_smem, k_smem,")
    s = s.replace("= _attend(q_smem, k_smem,", "= _attend(CU_Q, q_smem, k_smem,")
    s = patch(s, "    # Block 0: S_0 and its softmax; nothing to multiply with V yet.\n", '''    rec = it == 0                       # the program's first tile
    dbg_base = (gl.program_id(0) * 2 + (m0 % 128) // 64) * 64
''', after=False)
    s = patch(s, '''        mbarrier.wait(v_full.index(prev), ((it + j - 1) // NUM_BUF) & 1)
''', '''        _mark(DBG, dbg_base, j, 0, _clk(), rec)
        _mark(DBG, dbg_base, j, 5, _gt(), rec)
''')
    s = patch(s, '''        _pass_turn(other_turn, PINGPONG)
        qk = warpgroup_mma_wait(1, deps=[qk])           # S_j done; the PV multiply may still run
''', '''        _mark(DBG, dbg_base, j, 2, _clk(), rec)
''')
    s = patch(s, '''        _pass_turn(other_turn, PINGPONG)
        qk = warpgroup_mma_wait(1, deps=[qk])''', '''        _mark(DBG, dbg_base, j, 1, _clk(), rec)
''', after=False)
    # (the code as of this folder's last commit: p_op since 9c3bb33, LATE_SUM named so since)
    s = sub(s, '''                                        _mask_at(False, WHOLE, DIAG_FIRST), not LATE_SUM)
        acc, p_op = _pv_wait(acc, p_op, dtype)
''', '''                                        _mask_at(False, WHOLE, DIAG_FIRST), not LATE_SUM)
        _mark(DBG, dbg_base, j, 3, _clk(), rec)
        acc, p_op = _pv_wait(acc, p_op, dtype)
        _mark(DBG, dbg_base, j, 4, _clk(), rec)
''')
    path = src_path.with_name("_fwd_timeline.py")
    path.write_text(s)
    return importlib.import_module("fa_ck.backends.triton._fwd_timeline"), path


def analyse(t, programs):
    """t: (programs, 2, NB, SLOTS) int64 -> dict of medians (cycles) and phase relations."""
    t = t.double()
    blocks = int((t[:, :, :, 0] > 0).any(0).any(0).sum())   # blocks recorded (j = 1..): min(NB, n_blocks) - 1
    t = t[:, :, 1:1 + blocks]
    ok = (t[..., 0] > 0).all(-1).all(-1)                  # programs whose first tile had them all, both WGs
    t = t[ok]
    s0, s1, s2, s3, s4, g = (t[..., i] for i in (0, 1, 2, 3, 4, 5))
    med = lambda x: float(x.median())
    period = s1[:, :, 1:] - s1[:, :, :-1]
    per = med(period)
    out = dict(programs=int(ok.sum()), period=per,
               turn_and_issue=med(s1 - s0), qk_wait=med(s2 - s1), softmax=med(s3 - s2), pv_wait=med(s4 - s3),
               to_next=med(s0[:, :, 1:] - s4[:, :, :-1]))
    for w in (0, 1):
        out[f"period_wg{w}"] = med(period[:, w])
    # offset of WG1's issue after WG0's in the same block, as a share of the period (0: in step)
    off = ((s1[:, 1] - s1[:, 0]) / per)
    out["offset_median"] = med(off)
    out["offset_q10_q90"] = [float(off.quantile(0.1)), float(off.quantile(0.9))]
    # softmax overlap: time both warpgroups are in [s2, s3] at once, share of one softmax's time
    lo = torch.maximum(s2[:, 0], s2[:, 1])
    hi = torch.minimum(s3[:, 0], s3[:, 1])
    out["softmax_both_share"] = float((hi - lo).clamp_min(0).sum() / (s3[:, 0] - s2[:, 0]).sum())
    # clock rate from clock64 against globaltimer over the recorded blocks
    ghz = (s0[:, 0, -1] - s0[:, 0, 0]) / (g[:, 0, -1] - g[:, 0, 0])
    out["ghz"] = med(ghz)
    return out


VARIANTS = {
    "fp8": (True, {}),
    "fp8pp": (True, {"fwd": {"PINGPONG": True}}),
    "fp8pp3": (True, {"fwd": {"PINGPONG": True, "num_stages": 3}}),
    "fp8st3": (True, {"fwd": {"num_stages": 3}}),
    "fp8late": (True, {"fwd": {"LATE_SUM": True}}),
    "bf16": (False, {}),
    "bf16pp": (False, {"fwd": {"PINGPONG": True}}),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--shapes", default="1x16384x16,4x4096x16")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    mod, path = instrumented()
    rows = []
    marks = {}
    try:
        for shape in args.shapes.split(","):
            b, s_len, h = map(int, shape.split("x"))
            d = 128
            q, k, v = (torch.randn(b, s_len, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            flops = 4 * b * h * s_len * s_len * d
            for name in args.variants.split(","):
                fp8, cfg = VARIANTS[name]
                os.environ["FA_CK_TRITON_CONFIG"] = json.dumps(cfg) if cfg else ""
                call = (lambda: fa_ck.flash_attn_fp8_func(q, k, v)) if fp8 else (lambda: fa_ck.flash_attn_func(q, k, v))
                row = dict(shape=f"B{b} S{s_len} H{h} d{d} full", variant=name)
                try:
                    ms = {}
                    for kind in ("plain", "timeline"):
                        orig_k, orig_f = lg.fwd_gluon_kernel, lg._forward_gluon
                        dbg = None
                        if kind == "timeline":
                            plans._PLANS.clear()        # (a plan would replay the plain kernel)
                            programs = torch.cuda.get_device_properties(0).multi_processor_count
                            dbg = torch.zeros(programs * 2 * NB * SLOTS, dtype=torch.int64, device="cuda")
                            lg.fwd_gluon_kernel = mod.fwd_gluon_kernel
                            lg._forward_gluon = lambda q_, k_, v_, o_, l_, cu_q, *rest: orig_f(q_, k_, v_, o_, l_, dbg,
                                                                                              *rest)
                        try:
                            for _ in range(3):
                                call()
                            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            e0.record()
                            for _ in range(10):
                                call()
                            e1.record()
                            torch.cuda.synchronize()
                            ms[kind] = e0.elapsed_time(e1) / 10
                        finally:
                            lg.fwd_gluon_kernel, lg._forward_gluon = orig_k, orig_f
                    row.update(ms_plain=ms["plain"], ms_timeline=ms["timeline"],
                               tflops_plain=flops / ms["plain"] / 1e9)
                    dbg.zero_()
                    plans._PLANS.clear()
                    lg.fwd_gluon_kernel = mod.fwd_gluon_kernel
                    lg._forward_gluon = lambda q_, k_, v_, o_, l_, cu_q, *rest: orig_f(q_, k_, v_, o_, l_, dbg, *rest)
                    try:
                        call()
                        torch.cuda.synchronize()
                    finally:
                        lg.fwd_gluon_kernel, lg._forward_gluon = orig_k, orig_f
                    t = dbg.view(-1, 2, NB, SLOTS).cpu()
                    marks[f"{name}_{shape}"] = t
                    row.update(analyse(t, t.shape[0]))
                except Exception as e:     # noqa: BLE001 - report and go on
                    row["error"] = str(e).splitlines()[0][:300] if str(e) else repr(e)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        os.environ["FA_CK_TRITON_CONFIG"] = ""
        path.unlink()
    torch.save(marks, os.path.join(args.out, "marks.pt"))   # {variant_shape: (programs, 2, NB, SLOTS) int64}
    json.dump(rows, open(os.path.join(args.out, "timeline.json"), "w"), indent=1)
    keys = ["shape", "variant", "ms_plain", "tflops_plain", "ms_timeline", "period", "period_wg0", "period_wg1",
            "turn_and_issue", "qk_wait", "softmax", "pv_wait", "to_next", "offset_median", "offset_q10_q90",
            "softmax_both_share", "ghz", "error"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys)
                     + " |")
    text = "\n".join(lines)
    open(os.path.join(args.out, "timeline.md"), "w").write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
