"""The triton backend: our FlashAttention-2 kernels (forward.py, backward.py), launched here.

Runs on NVIDIA and AMD GPUs, and on the CPU under TRITON_INTERPRET=1 (set before import),
which is how CI tests the kernels themselves. This module is the backend's API (available,
unsupported, forward, backward, quantize_fp8, dropout_mask), its output buffers and each call's
slow path; call_config.py chooses each kernel's config, launch_gluon.py launches the Hopper Gluon
kernels, quantize.py makes the fp8 forward's inputs, plans.py every launch and the replay of a
call signature's launches, host.py helpers they share.
"""
from __future__ import annotations

import contextlib
import math
import os

import torch

from ...params import FP8_DTYPES, AttnParams
from . import configs, decisions, launch_gluon, plans
from .call_config import _config
from .host import _cdiv, _lse_strides, _placeholders, _raw_max, _strides, _tma_ok
from .plans import _launch, _tma_allocator

NAME = "triton"
MAX_HEAD_DIM = 256
MAX_GRID_Z = 65535        # batch entries (or varlen sequences) are the grid's z
MAX_GRID_Y = 65535        # heads are its y (fp8 quantisation's: q's heads, then k's and v's)
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

try:
    import triton
    from . import quantize
    from .quantize import quantize_fp8  # noqa: F401  (the backend's API)
    from .backward import bwd_dkdv_kernel, bwd_dq_kernel, bwd_preprocess, dq_from_acc
    from .forward import fwd_kernel
    _IMPORT_ERROR = ""
except Exception as e:  # no triton, or a triton too old for our kernels
    _IMPORT_ERROR = f"{type(e).__name__}: {e}"


def available() -> tuple[bool, str]:
    if _IMPORT_ERROR:
        return False, f"triton is not importable ({_IMPORT_ERROR})"
    if configs.INTERPRET:
        return True, "TRITON_INTERPRET=1: kernels run in the interpreter on CPU tensors"
    if not torch.cuda.is_available():
        return False, "no GPU (set TRITON_INTERPRET=1 before importing fa_ck to run the kernels on the CPU)"
    return True, ""


def unsupported(q, k, v, p: AttnParams) -> str | None:
    ok, why = available()
    if not ok:
        return why
    if q.device.type == "cpu" and not configs.INTERPRET:
        return "CPU tensors (outside TRITON_INTERPRET=1)"
    if q.device.type not in ("cpu", "cuda"):
        return f"{q.device.type} tensors"
    if q.dtype not in _DTYPES and not (p.fp8 and q.dtype in FP8_DTYPES):
        return f"dtype {q.dtype}"
    batch = p.cu_seqlens_q.numel() - 1 if p.varlen else q.shape[0]
    if batch > MAX_GRID_Z:
        return f"{'sequences' if p.varlen else 'batch'} {batch} (the launch grid's z holds {MAX_GRID_Z})"
    quantised = p.fp8 and q.dtype not in FP8_DTYPES
    heads = q.shape[-2] + (k.shape[-2] + v.shape[-2] if quantised else 0)
    if heads > MAX_GRID_Y:
        return (f"{q.shape[-2]} heads{f' ({heads} with the k and v heads quantised alongside)' if quantised else ''}: "
                f"the launch grid's y holds {MAX_GRID_Y}")
    if q.shape[-1] > MAX_HEAD_DIM or v.shape[-1] != q.shape[-1]:
        return f"head_dim {q.shape[-1]} (supported: 1..{MAX_HEAD_DIM}, same for q, k and v)"
    if p.fp8:
        native = configs.fp8_dtype(q.device)
        if native is None:
            return f"fp8 on {configs.arch(q.device)} (no fp8 matrix instructions)"
        if q.dtype in FP8_DTYPES and q.dtype != native:
            return f"fp8 inputs in {q.dtype} (this device multiplies {native})"
        if p.varlen:
            return "fp8 with varlen (per-sequence scales are not implemented)"
        if p.dropout_p > 0:
            return "fp8 with dropout (not implemented)"
    return None


_GUARD = 4096          # elements of NaN canary on each side of a poisoned buffer
_canaries: list = []


def _poisoning() -> bool:
    return os.environ.get("FA_CK_POISON") == "1"


def _empty(shape, dtype, device, poison: bool):
    """Output buffers. poison (FA_CK_POISON=1, tests; read once per call by _poisoning) fills them
    with NaN and surrounds them with NaN canaries: an element the kernels never write cannot pass
    for a right answer, and a write past either end is caught by _check_canaries()."""
    if not poison:
        return torch.empty(shape, dtype=dtype, device=device)
    n = math.prod(shape)
    buf = torch.full((n + 2 * _GUARD,), float("nan"), dtype=dtype, device=device)
    _canaries.append(buf)
    return buf[_GUARD:_GUARD + n].view(shape)


def _check_canaries(what: str):
    """Raise if a kernel wrote outside an output buffer (poison mode only)."""
    bufs, _canaries[:] = list(_canaries), []
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        return                               # reading them would sync inside a CUDA graph capture
    for buf in bufs:
        guards = torch.cat([buf[:_GUARD], buf[-_GUARD:]])
        if not torch.isnan(guards.float()).all():
            raise RuntimeError(f"fa_ck triton {what}: a kernel wrote outside its output buffer")


def _flags(q, p: AttnParams, head_dim: int) -> dict:
    bd = configs.fp8_block_d(head_dim) if p.fp8 else configs.block_d(head_dim)
    return dict(
        BLOCK_D=bd, EVEN_D=bd == head_dim,
        VARLEN=p.varlen, SOFTCAP=p.softcap > 0, ALIBI=p.alibi_slopes is not None,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0, DROPOUT=p.dropout_p > 0,
        DOT_F32=configs.INTERPRET and q.dtype in (torch.bfloat16, *FP8_DTYPES),
    )


def _scalars(p: AttnParams) -> dict:
    log2e = 1.0 / math.log(2.0)
    cap = p.softcap if p.softcap > 0 else 1.0
    return dict(scale_log2=p.scale * log2e, softcap_in=p.scale / cap, softcap_out=cap * log2e,
                window_left=p.window_left, window_right=p.window_right, dropout_p=float(p.dropout_p))


def _shape(q, k, p: AttnParams):
    """(batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, 4-D strides helper)."""
    if p.varlen:
        return p.cu_seqlens_q.numel() - 1, p.max_seqlen_q, p.max_seqlen_k, q.shape[1], k.shape[1], q.shape[2]
    return q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3]


def _extras(q, p: AttnParams):
    dummy, no_slopes, no_rng = _placeholders(q.device)
    slopes = p.alibi_slopes if p.alibi_slopes is not None else no_slopes
    slope_stride = slopes.stride(0) if slopes.dim() == 2 else 0
    rng = p.rng if p.rng is not None else no_rng
    cu_q = p.cu_seqlens_q if p.varlen else dummy
    cu_k = p.cu_seqlens_k if p.varlen else dummy
    return slopes, slope_stride, rng, cu_q, cu_k


def _launch_cfg(cfg: dict) -> dict:
    return {k: cfg[k] for k in ("num_warps", "num_stages")}


def _device_of(t: torch.Tensor):
    """Triton launches on the current CUDA device: make it the tensors' (q on cuda:1 while cuda:0
    is current would otherwise run on the wrong GPU)."""
    if t.is_cuda and t.device.index != torch.cuda.current_device():
        return torch.cuda.device(t.device)
    return contextlib.nullcontext()


def forward(q, k, v, p: AttnParams):
    with _device_of(q):
        return _forward(q, k, v, p)


def backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    with _device_of(q):
        return _backward(do, q, k, v, out, lse, p, dlse)


_WORKSPACE = 5     # the fp8 workspace's place among a forward's slots: (q, k, v, out, lse, workspace, descales)


def _forward(q, k, v, p: AttnParams):
    b, sq, sk, hq, hkv, d = _shape(q, k, p)
    out_dtype = (p.out_dtype or torch.bfloat16) if q.dtype in FP8_DTYPES else q.dtype
    poison = _poisoning()
    out = _empty(q.shape, out_dtype, q.device, poison)
    lse = _empty((hq, q.shape[0]) if p.varlen else (b, hq, sq), torch.float32, q.device, poison)
    # (the key leaves out fp8's workspace: a fresh allocation, its parts at 256-byte offsets)
    # (a caller's fp8 descales are slots too, after the workspace's place; ones kept for those
    # that did not come)
    if q.dtype in FP8_DTYPES:
        p = quantize.with_unit_descales(p, q, k)
    descales = (p.q_descale, p.k_descale, p.v_descale)      # (all three, or none: 16-bit inputs)
    key = plans._plan_key("fwd", p, poison, (q, k, v, *(t for t in descales if t is not None)), (out, lse))
    plan = plans._PLANS.get(key)
    if plan is not None:
        # fp8: the quantised k, v (q where the kernel reads q8) and their scales, or a caller's v in
        # the kernel's key order, are parts of a workspace made per call, a slot of the plan, so that
        # such calls replay too (their slow path cost ~0.8 ms of host time per call on the H200: more
        # than the kernels below 4k keys); one tensor at the size the slow path's had, its parts
        # taken by byte offset
        work = quantize.fp8_workspace(plan.slot_bytes[_WORKSPACE], q.device) if _WORKSPACE in plan.slot_bytes \
            else None
        plan.replay((q, k, v, out, lse, work, *descales))
    else:
        with plans._Recording(key) as rec:
            work = _launch_forward(q, k, v, out, lse, p)
            rec.save((q, k, v, out, lse, *(work or (None,)), *descales))
    if _canaries:
        _check_canaries("forward")
        out, lse = out.clone(), lse.clone()   # own storage, as the op's fake kernel promises
    return out, lse


def _launch_forward(q, k, v, out, lse, p: AttnParams) -> tuple:
    """The forward's slow path: quantises (fp8 of 16-bit inputs), works out the kernel, its config
    and its arguments, and launches it. Returns the workspace quantising wrote into (quantize.
    fp8_buffers' last item; with no q8 where the kernel rounds q itself) as a 1-tuple, or () where
    nothing was quantised."""
    b, sq, sk, hq, hkv, d = _shape(q, k, p)
    qd = kd = vd = _placeholders(q.device)[1]              # no descales (an empty float32 stand-in)
    fp8 = dict(FP8=False, P_SCALE=1.0)
    p_regs = fp8_inputs = False
    buffers = ()
    qk_max = 0.0                                          # (q's and k's quantised max: the format's)
    if p.fp8:
        # which kernel runs depends on the fp8 tensors it reads, which exist (fa_ck's buffers) before
        # they are written: the Gluon kernel keeps P in registers (P_REGS), v's keys in its order,
        # written so by fa_ck's quantisation, or for a caller's fp8 by a copy of v
        # (quantize.keys_for_registers); with P staged, a caller's keys-contiguous v is read as it comes
        fp8_inputs = q.dtype in FP8_DTYPES
        if fp8_inputs:
            caller_v = v
            # (a v fa_ck copies anyway: its layout stands in for the copy, made once the kernel is known)
            v = v if v.stride(1) == 1 or v.shape[1] <= 1 else quantize.empty_bshd(v.shape, v.dtype, v.device, True)
            fp8_q, fp8_k, fp8_v = q, k, v
        else:
            # q8 is made below only where the kernel reads it; until then k8 stands in for it: a
            # fresh contiguous tensor of the same fp8 type and head dim, so TMA reads the one exactly
            # where it reads the other (16-byte rows, base and strides)
            buffers = quantize.fp8_buffers(q, k, v, with_q8=False)
            fp8_q, fp8_k, fp8_v = buffers[1], buffers[1], buffers[2]
        fp8 = dict(FP8=True, P_SCALE=float(torch.finfo(fp8_v.dtype).max))
        tma_possible = _tma_ok(fp8_k, fp8_v, keys_contiguous=fp8_v)
        gluon_possible = launch_gluon._gluon_ok(fp8_q, fp8_k, fp8_v, out, p)
        # (q for its shape and device; the config's switches follow p.fp8, not q's type)
        chosen = _config("fwd", q, d, p, sq, sk, tma_possible, gluon_possible=gluon_possible, fp8_inputs=fp8_inputs)
        p_regs = bool(chosen.get("P_REGS"))
        # Q_CONVERT: q stays 16-bit, the Gluon kernel rounds each tile of it (where TMA reads q as it is)
        q_convert = bool(chosen.get("Q_CONVERT")) and _tma_ok(q)
        if fp8_inputs:
            if p_regs:      # (into a workspace of its own, the plan's slot, as quantising's)
                v, work = quantize.keys_for_registers(caller_v)
                buffers = (work,)
            else:
                v = quantize.keys_contiguous(caller_v)
        elif not q_convert:
            # q8 too: a workspace with room for it, the first (nothing written into it yet) let go
            # before it is made, so that the slow path's peak holds one (views of it kept here had
            # held both: h200-20261204-descales call 1)
            del buffers, fp8_q, fp8_k, fp8_v
            buffers = quantize.fp8_buffers(q, k, v)
        # F16_SCORES (where decided): q and k quantised to 16, so that the kernel's f16 sums of scores
        # cannot overflow (the kernel then rounds q to 16 too: qk_max reaches it through run)
        qk_max = configs.F16_SCORES_QK_MAX if decisions.fwd_f16_scores(chosen, q_convert and not fp8_inputs, sq, sk,
                                                                        p) else 0.0
        q, k, v, qd, kd, vd = quantize.fp8_inputs(q, k, v, p, buffers, p_regs, q_convert, qk_max)
    else:
        tma_possible = _tma_ok(k, v)
        gluon_possible = launch_gluon._gluon_ok(q, k, v, out, p)
    slopes, slope_stride, rng, cu_q, cu_k = _extras(q, p)
    flags, scal = _flags(q, p, d), _scalars(p)
    descale_strides = (qd.stride(0), kd.stride(0)) if p.fp8 else (0, 0)

    def run(cfg):
        if p_regs != bool(cfg.get("P_REGS")):   # (autotune tunes tiles, not switches)
            raise AssertionError("fp8: v's keys were laid out for another kernel than the one configured")
        if p.fp8 and q.dtype != k.dtype and not cfg.get("GLUON"):
            raise AssertionError("fp8: q was left 16-bit for the Gluon kernel (Q_CONVERT), not this one")
        if cfg.get("GLUON"):
            return launch_gluon._forward_gluon(q, k, v, out, lse, cu_q, cu_k, qd, kd, vd, p, cfg, sq, sk, hq, hkv, b,
                                               d, scal, fp8["P_SCALE"], qk_max)
        if p.fp8:
            cfg = configs.for_fp8(cfg)
        if cfg["TMA"]:
            _tma_allocator()
        grid = (_cdiv(sq, cfg["BLOCK_M"]), hq, b)
        _launch(fwd_kernel, grid,
                (q, k, v, out, lse, slopes, rng, cu_q, cu_k, qd, kd, vd,
                 *_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), v.stride(-1),
                 *_strides(out, p.varlen), *_lse_strides(lse, p.varlen), slope_stride, *descale_strides,
                 sq, sk, hq // hkv, d, scal["scale_log2"], scal["softcap_in"], scal["softcap_out"],
                 scal["window_left"], scal["window_right"], scal["dropout_p"], sk),
                # (not its fp8 kernel: with RAW_MAX it spilled on sm90, 16 / 96 bytes at d64 full / causal)
                dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], TMA=cfg["TMA"],
                     RAW_MAX=_raw_max(cfg, p, scal["scale_log2"]) and not p.fp8, **flags, **fp8, **_launch_cfg(cfg)))

    run(_config("fwd", q, d, p, sq, sk, tma_possible, bench=_bencher(run), gluon_possible=gluon_possible,
                fp8_inputs=fp8_inputs))
    return buffers[-1:]


def _backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    lse = lse.contiguous()                   # delta below shares lse's strides
    if do.stride(-1) != 1:
        do = do.contiguous()
    poison = _poisoning()
    dq = _empty(q.shape, q.dtype, q.device, poison)
    dk = _empty(k.shape, k.dtype, k.device, poison)
    dv = _empty(v.shape, v.dtype, v.device, poison)
    ins = [do, q, k, v, out, lse]
    # delta, lse / scale and, replaying a one-pass plan, its fp32 dQ buffer: one allocation, each
    # part 16-byte aligned (so the key takes them as aligned); an allocation cost ~15 us of host
    # time on autograd's thread (bench/results/h200-20261202-direct call 3)
    key = plans._plan_key("bwd", p, poison, ins, [dq, dk, dv], dlse is None)
    plan = plans._PLANS.get(key)
    n = lse.numel()
    n_pad = _cdiv(n, 4) * 4
    one_pass = plan is not None and plan.one_pass
    temps = _empty((2 * n_pad + (q.numel() + 4 if one_pass else 0),), torch.float32, lse.device, poison)
    delta, lse_s = temps[:n].view(lse.shape), temps[n_pad:n_pad + n].view(lse.shape)
    slots = ins + [dq, dk, dv, delta, lse_s]
    if plan is not None:
        # (the fp32 dQ buffer, zeroed by the replayed bwd_preprocess with the counter past its end:
        # plans are never of varlen calls, whose rows outside every sequence it would not zero)
        slots.append(temps[2 * n_pad:2 * n_pad + q.numel()].view(q.shape) if one_pass else None)
        if dlse is None:
            plan.replay(slots)
        else:
            plan.replay(slots, stop=1)                # the slow path's first launch: bwd_preprocess
            delta -= dlse
            plan.replay(slots, start=1)
    else:
        with plans._Recording(key) as rec:
            dq_acc = _launch_backward(do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, p, dlse)
            rec.save(slots + [dq_acc], one_pass=dq_acc is not None)
    if _canaries:
        _check_canaries("backward")
        dq, dk, dv = dq.clone(), dk.clone(), dv.clone()
    return dq, dk, dv


def _dq_accumulator(q: torch.Tensor, zeros: bool = True) -> torch.Tensor:
    """ONE_PASS's fp32 dQ / scale buffer in q's shape (contiguous), with 16 bytes past its end for
    the Gluon dK/dV kernel's unit counter (launch_gluon._dkdv_gluon, DYNAMIC), both zeros: made
    so here (zeros), or left to bwd_preprocess (ZERO_DQ: calls other than varlen, whose rows
    outside every sequence no program of it covers)."""
    n = q.numel()
    return (torch.zeros if zeros else torch.empty)(n + 4, dtype=torch.float32, device=q.device)[:n].view(q.shape)


def _launch_backward(do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, p: AttnParams, dlse):
    """The backward's slow path: works out the kernels, their configs and their arguments, and
    launches them; -> ONE_PASS's fp32 dq buffer (dq / scale, which dq_from_acc scaled into dq),
    or None when a dQ kernel wrote dq."""
    b, sq, sk, hq, hkv, d = _shape(q, k, p)
    slopes, slope_stride, rng, cu_q, cu_k = _extras(q, p)
    flags, scal = _flags(q, p, d), _scalars(p)
    bd = flags["BLOCK_D"]

    pre_bm = 64 if configs.arch(q.device) != "interpreter" else 32

    def preprocess(dq_zero):
        """bwd_preprocess, zeroing dq_zero too (ONE_PASS's buffer) unless it is None."""
        acc = dq_zero if dq_zero is not None else _placeholders(q.device)[1]
        _launch(bwd_preprocess, (_cdiv(sq, pre_bm), hq, b),
                (out, do, delta, lse, lse_s, acc, *_strides(out, p.varlen), *_strides(do, p.varlen),
                 *_lse_strides(lse, p.varlen), *(_strides(acc, False) if dq_zero is not None else (0, 0, 0)),
                 acc.numel(), sq, d, p.scale, cu_q),
                dict(BLOCK_M=pre_bm, BLOCK_D=bd, VARLEN=p.varlen, ZERO_DQ=dq_zero is not None))

    common = (*_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), *_strides(do, p.varlen))
    tail = (sq, sk, hq // hkv, d, p.scale, scal["scale_log2"], scal["softcap_in"], scal["softcap_out"],
            scal["window_left"], scal["window_right"], scal["dropout_p"], sk)

    # dk/dv builds its q and dO descriptors inside the loop over a kv head's q heads, which Triton
    # 3.6's pipeliner cannot always handle: TMA only without GQA (group 1 compiles the loop away).
    tma_dkdv = hq == hkv and _tma_ok(q, do)

    def run_dkdv(cfg, dq_acc=None):
        """The dK/dV launch; ONE_PASS: into dq_acc (zeros; fresh ones when None: autotune's
        search runs several)."""
        if cfg["ONE_PASS"] and dq_acc is None:
            dq_acc = _dq_accumulator(q)
        acc = dq_acc if cfg["ONE_PASS"] else _placeholders(q.device)[1]
        if cfg.get("GLUON"):
            return launch_gluon._dkdv_gluon(q, k, v, do, lse_s if cfg.get("LSE_PREP") else lse, delta, dk, dv, acc,
                                            cu_q, cu_k, p, cfg, sq, sk, hkv, b, d, scal)
        if cfg["TMA"]:
            _tma_allocator()
        _launch(bwd_dkdv_kernel, (_cdiv(sk, cfg["BLOCK_N"]), hkv, b),
                (q, k, v, do, lse, delta, dk, dv, acc, slopes, rng, cu_q, cu_k, *common,
                 *_strides(dk, p.varlen), *_strides(dv, p.varlen),
                 *(_strides(acc, p.varlen) if cfg["ONE_PASS"] else (0, 0, 0)), *_lse_strides(lse, p.varlen),
                 slope_stride, *tail),
                dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], ONE_PASS=cfg["ONE_PASS"], TMA=cfg["TMA"], **flags,
                     **_launch_cfg(cfg)))

    def run_dq(cfg):
        if cfg.get("GLUON"):
            return launch_gluon._dq_gluon(q, k, v, do, lse, delta, dq, cu_q, cu_k, p, cfg, sq, sk, hq, hkv, b, d, scal)
        _launch(bwd_dq_kernel, (_cdiv(sq, cfg["BLOCK_M"]), hq, b),
                (q, k, v, do, lse, delta, dq, slopes, rng, cu_q, cu_k, *common,
                 *_strides(dq, p.varlen), *_lse_strides(lse, p.varlen), slope_stride, *tail),
                dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], **flags, **_launch_cfg(cfg)))

    gluon_ok = launch_gluon._gluon_ok(q, k, v, do, p)
    # GQA only through host-made 4-D descriptors (a unit steps through its kv head's q heads; not
    # varlen; by default where decisions.gluon_wins); a positive scale: its multiplies start from
    # -lse / scale, which a zero or negative scale would turn into NaN or +inf
    gqa_ok = hq == hkv or (not p.varlen and launch_gluon._host_desc_ok(q, k, v, do))
    gluon_dkdv = gqa_ok and gluon_ok and p.scale > 0
    # the dK/dV config before bwd_preprocess, which zeroes ONE_PASS's buffer; autotune's search
    # (no plan is recorded then) runs bwd_preprocess first for the delta its launches read
    cfg = _config("bwd_dkdv", q, d, p, sq, sk, tma_dkdv, bench=_bencher(run_dkdv, setup=lambda: preprocess(None)),
                  gluon_possible=gluon_dkdv, group=hq // hkv)
    dq_acc = _dq_accumulator(q, zeros=p.varlen) if cfg["ONE_PASS"] else None
    preprocess(None if dq_acc is None or p.varlen else dq_acc)
    if dlse is not None:
        # d lse / d S = P, so a gradient on lse enters as dS = P * (dP - (delta - dlse))
        delta -= dlse
    run_dkdv(cfg, dq_acc)
    if cfg["ONE_PASS"]:                      # dq / scale was accumulated by bwd_dkdv
        block = 4096 if configs.arch(q.device) != "interpreter" else 256
        _launch(dq_from_acc, (_cdiv(dq.numel(), block),), (dq_acc, dq, dq.numel(), p.scale), dict(BLOCK=block))
        return dq_acc
    run_dq(_config("bwd_dq", q, d, p, sq, sk, False, bench=_bencher(run_dq), gluon_possible=gluon_ok))
    return None


def _bencher(run, setup=None):
    """Time one config of a launch (used only when autotune searches); setup: called once before
    the first timing."""
    def bench(cfg):
        nonlocal setup
        if setup is not None:
            setup, once = None, setup
            once()
        # 5 ms / 20 ms windows picked configs slower than the defaults on the H200 (clocks still
        # ramping, too few repeats): warm longer and time longer.
        return triton.testing.do_bench(lambda: run(cfg), warmup=25, rep=60, return_mode="median")
    return bench


def dropout_mask(rng, batch: int, heads: int, seqlen_q: int, seqlen_k: int, dropout_p: float) -> torch.Tensor:
    """The keep mask (bool, (batch, heads, seqlen_q, seqlen_k)) our kernels apply for this rng
    (varlen: pass the max sequence lengths; the kernels' row stride is max_seqlen_k)."""
    from .forward import dropout_mask_kernel
    keep = torch.empty((batch, heads, seqlen_q, seqlen_k), dtype=torch.int8, device=rng.device)
    bm, bn = 32, 32
    grid = (_cdiv(seqlen_q, bm), heads, batch)
    dropout_mask_kernel[grid](keep, rng, seqlen_q, seqlen_k, seqlen_k, dropout_p,
                              BLOCK_M=bm, BLOCK_N=bn)
    return keep.bool()
