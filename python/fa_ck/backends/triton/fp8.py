"""fp8 orchestration: what the fp8 forward reads, made from the call's q, k and v.

16-bit (or fp32) inputs are quantised per (batch, head) by kernels/quantize.py in two launches, into
one workspace (fp8_buffers: its parts by byte offset), which is a slot of the forward's replay plan:
fp8 calls replay too, a replay making the workspace alone (fp8_workspace). A caller's fp8 inputs
keep their descales (ones stand in for any not given: with_unit_descales); their v is copied into
the layout the kernel reads. Which layout, and whether q is copied at all, the forward's config
says (prepare).
"""
from __future__ import annotations

import dataclasses
import math

import torch
import triton

from ...params import FP8_DTYPES, AttnParams
from . import device, fast_path
from .buffers import cdiv
from .kernels.quantize import amax_kernel, keys_for_registers_kernel, quantize_kernel
from .sizes import keys_padded


def quantize_fp8(x: torch.Tensor, dtype: torch.dtype, keys_contiguous: bool = False, target_max: float = 0.0):
    """x (B, S, H, D) -> (x in fp8 `dtype`, descale (B, H) float32), one scale per (batch, head):
    scale = fp8 max / amax, so the largest |x| lands on the format's max (or on target_max, as
    F16_SCORES quantises q and k); x ~= x8 * descale. keys_contiguous (for v): the same logical
    tensor stored (B, H, D, S) in memory."""
    b, s, h, d = x.shape
    x8 = empty_bshd(x.shape, dtype, x.device, keys_contiguous)
    if not x.numel():        # torch's amax of nothing is 0: the scale of an all-zero head
        zeros = torch.zeros((b, h), dtype=torch.float32, device=x.device)
        return x8, 1.0 / ((target_max or torch.finfo(dtype).max) / zeros.clamp_min(1e-12))
    descale = torch.empty(b * h, dtype=torch.float32, device=x.device)
    quantize(x, None, None, x8, None, None, torch.empty(b * h, dtype=torch.int32, device=x.device), descale,
             qk_max=target_max)
    return x8, descale.view(b, h)


def quantize(q, k, v, q8, k8, v8, amax_bits, descale, permute_v: bool = False, copy_q: bool = True,
             qk_max: float = 0.0):
    """q, k, v (k and v None: q alone) quantised into q8, k8, v8 (any layout; fp8) in two launches
    (the amax, then the scaled, rounded copy); amax_bits (int32, contiguous: zeroed here, a step of
    the plan, as the amax kernel folds maxima into it) and descale (float32) hold q's (batch, head)
    slots, then k's and v's, each from the next multiple of 4 (see fp8_buffers).
    permute_v: v8 (keys-contiguous, from empty_bshd) written in key_position's order, its padding
    too (PERMUTE_V). copy_q False: q's amax and descale only, q8 not written and may be None (the
    Gluon fp8 forward's Q_CONVERT rounds q itself, from its amax bits, as quantize_kernel would).
    qk_max > 0: q and k scaled to it rather than to the format's max (F16_SCORES), v as ever."""
    if q8 is None and copy_q:
        raise AssertionError("quantize: q8 None needs copy_q False")
    alone = k is None
    if alone:
        k, v, k8, v8 = q, q, q8, q8                           # (no programs for them: no k or v heads)
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], (0 if alone else k.shape[2])
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    # the interpreter has no fnuz type and a wrong fp32 -> fp8 cast: there the kernel writes the
    # values already on the fp8 grid in float32, and torch's cast of them is exact
    # (permute_v writes v8's padding too, past its shape: v8 itself goes to the kernel, as a plan
    # replays only its slots, and the interpreter's stand-in covers the padding)
    padded = {id(v8): padded_keys(v8)} if permute_v else {}
    temps = {id(t): torch.empty_strided(padded.get(id(t), t).shape, t.stride(), dtype=torch.float32, device=t.device)
             for t in (q8, k8, v8) if copy_q or t is not q8} if device.INTERPRET else {}
    outs = tuple(temps.get(id(t), t) for t in (q8, k8, v8))      # (q8 itself, unwritten, without copy_q)
    if q8 is None:           # (none made: without copy_q nothing dereferences it, k8 stands in for it)
        outs = (outs[1], *outs[1:])
    block_s = 16 if device.INTERPRET else 64
    grid = (cdiv(max(sq, sk), block_s), hq + 2 * hkv, b)
    sizes = (sq, sk, d, hq, hkv, *fp8_slots(b, hq, hkv)[1:3])
    strides = (q.stride()[:3], k.stride()[:3], v.stride()[:3])
    consts = dict(BLOCK_S=block_s, BLOCK_D=triton.next_power_of_2(d))
    fast_path.zero(amax_bits)
    fast_path.launch(amax_kernel, grid, (q, k, v, amax_bits, *strides, *sizes), consts)
    dtype = k8.dtype                                          # (q8's too: one fp8 type)
    emin = (-7 if dtype == torch.float8_e4m3fnuz else -6) if device.INTERPRET else 0
    fast_path.launch(quantize_kernel, grid, (q, k, v, *outs, amax_bits, descale, *strides, *(t.stride() for t in outs),
                                             *sizes, torch.finfo(dtype).max, qk_max or torch.finfo(dtype).max),
                     dict(consts, ROUND_EMIN=emin, PERMUTE_V=permute_v, COPY_Q=copy_q))
    for x8 in {id(t): t for t in (q8, k8, v8) if id(t) in temps}.values():
        padded.get(id(x8), x8).copy_(temps[id(x8)])


def fp8_slots(b: int, hq: int, hkv: int) -> tuple:
    """(start of q's, k's and v's (batch, head) slots in the amax and descale buffers, their
    length): each from a multiple of 4 elements, so that each tensor's descales start 16-byte
    aligned as a torch allocation does (the kernels are specialised on pointer alignment)."""
    pad_q, pad_kv = -(-b * hq // 4) * 4, -(-b * hkv // 4) * 4
    return 0, pad_q, pad_q + pad_kv, pad_q + 2 * pad_kv


def fp8_buffers(q, k, v, with_q8: bool = True) -> tuple:
    """What quantising q, k and v writes: q8, k8, v8 (v keys-contiguous), the amax bits (int32,
    zeroed by quantize) and descales of all three, the descales' views per tensor, (B, Hq),
    (B, Hkv), (B, Hkv), which the forward reads, q's amax bits as (B, Hq) (the Gluon kernel's,
    where it rounds q itself: Q_CONVERT), and last the workspace (uint8) they are all parts of,
    each from a multiple of 256 bytes, with the strides torch gives them alone (v8's storage
    padded as empty_bshd's). with_q8 False: q8 is None (Q_CONVERT: nothing writes or reads it, so
    the forward's peak memory has no copy of q in fp8; where the kernel turns out to need it, the
    forward lets this workspace go and makes one with q8).

    One workspace, as every tensor made costs host time (docs/performance.md, Kernel choices); it
    is the plan's slot, its parts taken by byte offset, so a replay makes it alone (fp8_workspace,
    at the size the plan recorded)."""
    return _carve(q.shape, k.shape, v.shape, device.fp8_dtype(q.device), q.device, with_q8)


def fp8_workspace(nbytes: int, device) -> torch.Tensor:
    """The workspace fp8_buffers' parts are carved from (a replay's: one tensor, no parts made)."""
    return torch.empty(nbytes, dtype=torch.uint8, device=device)


def _carve(q_shape, k_shape, v_shape, dtype, device, with_q8: bool) -> tuple:
    """fp8_buffers' tuple for these shapes: the amax bits, the descales, k8, v8 and q8 (with_q8)
    in this order in one workspace."""
    (b, _, hq, _), hkv = q_shape, k_shape[2]
    *starts, n = fp8_slots(b, hq, hkv)
    at_descale = _round_up(4 * n)
    at_k = at_descale + _round_up(4 * n)
    at_v = at_k + _round_up(math.prod(k_shape))
    at_q = at_v + _round_up(_keys_contiguous_bytes(v_shape))
    work = fp8_workspace(at_q + (_round_up(math.prod(q_shape)) if with_q8 else 0), device)
    bits, floats, fp8 = work.view(torch.int32), work.view(torch.float32), work.view(dtype)
    amax_bits, descale = bits[:n], floats[at_descale // 4:at_descale // 4 + n]
    k8 = fp8.as_strided(k_shape, _contiguous_strides(k_shape), at_k)
    v8 = _keys_contiguous_view(fp8, v_shape, at_v)
    q8 = fp8.as_strided(q_shape, _contiguous_strides(q_shape), at_q) if with_q8 else None
    descales = (descale[lo:lo + b * h].view(b, h) for lo, h in zip(starts, (hq, hkv, hkv)))
    return (q8, k8, v8, amax_bits, descale, *descales, amax_bits[:b * hq].view(b, hq), work)


def _keys_contiguous_bytes(shape) -> int:
    """Bytes of an fp8 v (B, S, H, D) stored keys-contiguous, (B, H, D, S padded), as empty_bshd's."""
    b, s, h, d = shape
    return b * h * d * keys_padded(s)


def _keys_contiguous_view(fp8: torch.Tensor, shape, offset: int) -> torch.Tensor:
    """A (B, S, H, D) view of flat fp8 memory from `offset` (elements), stored keys-contiguous with
    each row of keys padded to a multiple of 16, as empty_bshd makes it."""
    b, s, h, d = shape
    vb, vh, vd, _ = _contiguous_strides((b, h, d, keys_padded(s)))
    return fp8.as_strided(shape, (vb, 1, vh, vd), offset)


def _round_up(nbytes: int) -> int:
    """nbytes to a multiple of 256: where the workspace's next part starts (TMA takes 16-byte aligned bases)."""
    return -(-nbytes // 256) * 256


def _contiguous_strides(shape) -> tuple:
    """A contiguous tensor's strides, as torch gives them (a dimension of 0 counts as 1)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def empty_bshd(shape, dtype, device, keys_contiguous: bool) -> torch.Tensor:
    """An uninitialised (B, S, H, D) tensor; keys_contiguous: stored (B, H, D, S) in memory, each
    row of keys padded to a multiple of 16 elements so that TMA can address it (fp8's v: TMA
    takes 16-byte row strides, which rows of S bytes lack at S = 300)."""
    b, s, h, d = shape
    if keys_contiguous:
        return torch.empty((b, h, d, keys_padded(s)), dtype=dtype, device=device)[..., :s].permute(0, 3, 1, 2)
    return torch.empty(shape, dtype=dtype, device=device)


def keys_contiguous(v: torch.Tensor) -> torch.Tensor:
    """v (B, S, H, D) with stride(1) == 1 (see forward.py), copied only when it is not already."""
    if v.stride(1) == 1 or v.shape[1] <= 1:
        return v
    return empty_bshd(v.shape, v.dtype, v.device, True).copy_(v)


def keys_for_registers(v: torch.Tensor) -> tuple:
    """A caller's fp8 v (B, S, H, D), any layout, copied keys-contiguous in key_position's order
    with zeros past the last key to a multiple of 16 (empty_bshd's padded storage): what fa_ck's
    own quantisation writes for the Gluon forward's P in registers (PERMUTE_V), so a caller's fp8
    takes that kernel too. One launch moving bytes, far quicker than torch's index_put of them
    (docs/performance.md, Kernel choices). Returns (the copy, the workspace it lies in:
    fp8_workspace's, a slot of the forward's plan, so that such calls replay)."""
    b, s, h, d = v.shape
    work = fp8_workspace(_round_up(_keys_contiguous_bytes(v.shape)), v.device)
    out = _keys_contiguous_view(work.view(v.dtype), v.shape, 0)
    if out.numel():
        block_s = 16 if device.INTERPRET else 64
        dst = padded_keys(out)
        fast_path.launch(keys_for_registers_kernel, (cdiv(keys_padded(s), block_s), h, b),
                (v, dst, v.stride(), dst.stride(), s, d), dict(BLOCK_S=block_s, BLOCK_D=triton.next_power_of_2(d)))
    return out, work


def padded_keys(v8: torch.Tensor) -> torch.Tensor:
    """A keys-contiguous v from empty_bshd seen to its padded length (a multiple of 16 keys)."""
    b, s, h, d = v8.shape
    return v8.as_strided((b, keys_padded(s), h, d), v8.stride())


_UNIT_DESCALES: dict = {}
_MAX_UNIT_DESCALES = 256


def with_unit_descales(p: AttnParams, q, k) -> AttnParams:
    """p with ones for the descales of a caller's fp8 q, k, v that did not come ((B, Hq) for q,
    (B, Hkv) for k and v), so that every fp8-inputs call has three, slots of its replay plan. The
    ones are kept per device and shape (kernels only read descales): made per call they cost a
    fill and an allocation each time. Not kept inside a CUDA graph capture (the graph's memory,
    its fill run at replay), nor past _MAX_UNIT_DESCALES shapes (none is ever freed: a kernel on
    another stream may still read it)."""
    if p.q_descale is not None and p.k_descale is not None and p.v_descale is not None:
        return p
    b = q.shape[0]

    def ones(h):
        key = (q.device, b, h)
        kept = _UNIT_DESCALES.get(key)
        if kept is not None:
            return kept
        t = torch.ones((b, h), dtype=torch.float32, device=q.device)
        if len(_UNIT_DESCALES) < _MAX_UNIT_DESCALES and not (q.is_cuda and torch.cuda.is_current_stream_capturing()):
            _UNIT_DESCALES[key] = t
        return t
    return dataclasses.replace(p, q_descale=p.q_descale if p.q_descale is not None else ones(q.shape[2]),
                               k_descale=p.k_descale if p.k_descale is not None else ones(k.shape[2]),
                               v_descale=p.v_descale if p.v_descale is not None else ones(k.shape[2]))


def fp8_inputs(q, k, v, p: AttnParams, buffers, permute_v: bool, convert_q: bool = False, qk_max: float = 0.0):
    """(q8, k8, v8, q_descale, k_descale, v_descale) for the fp8 kernel: fp8 inputs (v keys-
    contiguous) with their three descales (with_unit_descales'), or 16-bit ones quantised into buffers
    (fp8_buffers' tuple), permute_v: v8 in key_position's order (FwdConfig.p_regs); convert_q (the Gluon kernel's
    Q_CONVERT): q itself and its amax bits in place of q8 and q's descales, q8 left unwritten; qk_max
    (F16_SCORES): q's and k's scale to it (quantize)."""
    if q.dtype in FP8_DTYPES:
        return q, k, v, p.q_descale.contiguous(), p.k_descale.contiguous(), p.v_descale.contiguous()
    q8, k8, v8, amax_bits, descale, qd, kd, vd, q_amax, _ = buffers
    quantize(q, k, v, q8, k8, v8, amax_bits, descale, permute_v, copy_q=not convert_q, qk_max=qk_max)
    return (q, k8, v8, q_amax, kd, vd) if convert_q else (q8, k8, v8, qd, kd, vd)


def prepare(q, k, v, p: AttnParams, choose):
    """The fp8 forward's inputs: (q, k, v, q_descale, k_descale, v_descale, cfg, workspace or None).
    choose(fp8_q, fp8_k, fp8_v) -> the forward's config, from tensors laid out as the kernel will
    read them (fa_ck's own buffers exist, unwritten, before the config is known; with q rounded in
    the kernel there is no q8, and k8 stands in for it: the same type, head dim and alignment)."""
    fp8_in = q.dtype in FP8_DTYPES
    buffers = ()
    if fp8_in:
        caller_v = v
        # (a v fa_ck copies anyway: the copy's layout stands in for it)
        layout_v = v if v.stride(1) == 1 or v.shape[1] <= 1 else empty_bshd(v.shape, v.dtype, v.device, True)
        cfg = choose(q, k, layout_v)
        if cfg.p_regs:
            v, work = keys_for_registers(caller_v)
            buffers = (work,)
        else:
            v = keys_contiguous(caller_v)
    else:
        buffers = fp8_buffers(q, k, v, with_q8=False)
        cfg = choose(buffers[1], buffers[1], buffers[2])
        if not cfg.q_convert:
            # q8 too: the first workspace (nothing written into it yet) let go before the next is made,
            # so that the peak holds one
            del buffers
            buffers = fp8_buffers(q, k, v)
    q, k, v, qd, kd, vd = fp8_inputs(q, k, v, p, buffers, cfg.p_regs, cfg.q_convert, cfg.qk_max)
    return q, k, v, qd, kd, vd, cfg, (buffers[-1] if buffers else None)
