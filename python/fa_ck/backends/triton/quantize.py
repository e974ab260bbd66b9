"""Per-(batch, head) fp8 quantisation of q, k and v for the fp8 forward: two launches over all three.

Program axis 1 runs over q's heads, then k's, then v's (_which); each kernel serves the three
tensors in one launch (the forward's six launches were ~0.1-0.2 ms of host time per fp8 call on
the H200, more than the quantisation's GPU time at short sequences: bench/results
h200-20261201-sixteenth). A single tensor is quantised as "q" with no k or v heads.

amax_kernel reads a tile and folds max |x| into its (batch, head)'s int32 slot with an atomic max
on the float's bits (non-negative floats order as their bit patterns, and a NaN's pattern lies
above +inf, so a NaN input gives a NaN amax, as torch's reduction does). It was torch's
inf-norm, 74 us per 64 MB tensor on the H200 (0.9 TB/s; bench/results/h200-20261130-eighth call
2). quantize_kernel then reads x again and writes x * scale, clamped and rounded to the fp8
format, in whatever layout the output view has (v is written keys-contiguous, see forward.py),
scale = fp8 max / amax and the descale 1 / scale computed in-kernel with IEEE division, so every
value is torch's arithmetic bit for bit. Under the interpreter (no fnuz type, a wrong fp32 -> fp8
cast: see common.fp8_round) the kernel rounds onto the fp8 grid itself (ROUND_EMIN) and writes
float32; the caller casts, exactly.

The amax and descale buffers hold q's (batch, head) slots, then k's from start_k, then v's from
start_v, each (B, H) in row-major order.

PERMUTE_V (the Gluon fp8 forward's P_REGS): v's key s is stored at key_position(s), and each row
of keys is written to a multiple of 16, zeros past the last key (the forward reads whole groups).
COPY_Q off (the Gluon fp8 forward's Q_CONVERT): q's amax and descale only, no q8: that kernel
rounds each tile of q itself from q's amax bits, with this kernel's arithmetic (forward_gluon.
_q_scales, _convert_q), so besides the amax pass q is read once, not read and written
(h200-20261203-late-wait call 2).

One launch for both passes, each quantising item waiting on its (batch, head)'s amax items, was
measured on the H200 (bench/results h200-20261203-fused-quant): 2-5 % less GPU time than these
two launches, and no more even with the waits left out; not kept.

The host side below makes what quantising writes (fp8_buffers: parts of one workspace,
a slot of the forward's replay plan, so fp8 calls of 16-bit inputs replay, a replay making the
workspace alone: fp8_workspace; q8 only where the kernel reads it) and hands the forward its fp8
inputs (fp8_inputs).
"""
import dataclasses
import math

import torch
import triton
import triton.language as tl

from ...params import FP8_DTYPES, AttnParams
from . import configs
from .common import fp8_round, wide
from .host import _cdiv, _keys_padded
from .plans import _launch, _zero


@triton.jit
def _which(j, b, heads_q, heads_kv, start_k, start_v):
    """Program j of axis 1 (batch b): (tensor 0 / 1 / 2 for q / k / v, its head, its (batch,
    head) slot in the amax and descale buffers, where k's slots start at start_k, v's at start_v)."""
    t = (j >= heads_q).to(tl.int32) + (j >= heads_q + heads_kv).to(tl.int32)
    first = tl.where(t == 0, 0, tl.where(t == 1, heads_q, heads_q + heads_kv))     # its first head on axis 1
    heads = tl.where(t == 0, heads_q, heads_kv)
    start = tl.where(t == 0, 0, tl.where(t == 1, start_k, start_v))
    return t, j - first, start + b * heads + (j - first)


@triton.jit
def key_position(s):
    """Where key s of a row of v lies for the Gluon fp8 forward's P in registers: within each group
    of 16 keys, bits 1-2 of s move to bits 2-3 and bit 3 to bit 1 (forward_gluon._keys_for_registers
    reorders P's keys the same way)."""
    return (s & ~15) | ((s & 6) << 1) | ((s & 8) >> 2) | (s & 1)


@triton.jit
def _load(X, b, h, stride_b, stride_s, stride_h, seqlen, head_dim, offs_s, offs_d):
    """Rows offs_s, columns offs_d of head h of batch b in fp32 (zeros where they do not exist),
    and which exist."""
    ok = (offs_s[:, None] < seqlen) & (offs_d[None, :] < head_dim)
    x = tl.load(X + wide(b) * stride_b + wide(h) * stride_h + wide(offs_s)[:, None] * stride_s + offs_d[None, :],
                mask=ok, other=0.0)
    return x.to(tl.float32), ok


@triton.jit
def _amax_bits(X, b, h, stride_b, stride_s, stride_h, seqlen, head_dim, offs_s, offs_d):
    x, _ = _load(X, b, h, stride_b, stride_s, stride_h, seqlen, head_dim, offs_s, offs_d)
    return tl.max(tl.max(tl.abs(x).to(tl.int32, bitcast=True), 1), 0)


@triton.jit
def amax_kernel(Q, K, V, AMAX_BITS, stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh, stride_vb,
                stride_vs, stride_vh, seqlen_q, seqlen_k, head_dim, heads_q, heads_kv, start_k, start_v,
                BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(2)
    t, h, slot = _which(tl.program_id(1), b, heads_q, heads_kv, start_k, start_v)
    if tl.program_id(0) * BLOCK_S >= tl.where(t == 0, seqlen_q, seqlen_k):
        return                       # (axis 0 spans the longer of q and k: decoding's one query)
    offs_s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    # (each tensor's whole tile inside its own branch: a tile of pointers chosen between branches
    # would be kept in registers, 254 of them per thread on sm90)
    if t == 0:
        bits = _amax_bits(Q, b, h, stride_qb, stride_qs, stride_qh, seqlen_q, head_dim, offs_s, offs_d)
    elif t == 1:
        bits = _amax_bits(K, b, h, stride_kb, stride_ks, stride_kh, seqlen_k, head_dim, offs_s, offs_d)
    else:
        bits = _amax_bits(V, b, h, stride_vb, stride_vs, stride_vh, seqlen_k, head_dim, offs_s, offs_d)
    tl.atomic_max(AMAX_BITS + slot, bits)


@triton.jit
def _quantize_tile(X, X8, scale, b, h, stride_b, stride_s, stride_h, stride_8b, stride_8s, stride_8h, stride_8d,
                   seqlen, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN: tl.constexpr, PERMUTE: tl.constexpr = False):
    x, ok = _load(X, b, h, stride_b, stride_s, stride_h, seqlen, head_dim, offs_s, offs_d)
    rows = offs_s
    if PERMUTE:     # (see PERMUTE_V above)
        ok = (offs_s[:, None] < tl.cdiv(seqlen, 16) * 16) & (offs_d[None, :] < head_dim)
        rows = key_position(offs_s)
    y = x * scale
    # clamped as torch.clamp does it: NaN stays NaN (a NaN head is NaN, not -fp8_max)
    y = tl.minimum(tl.maximum(y, -fp8_max, propagate_nan=tl.PropagateNan.ALL), fp8_max,
                   propagate_nan=tl.PropagateNan.ALL)
    if ROUND_EMIN != 0:                                        # interpreter: round here
        y = fp8_round(y, ROUND_EMIN)
    tl.store(X8 + wide(b) * stride_8b + wide(h) * stride_8h + wide(rows)[:, None] * stride_8s
             + wide(offs_d)[None, :] * stride_8d, y.to(X8.dtype.element_ty), mask=ok)


@triton.jit
def quantize_kernel(Q, K, V, Q8, K8, V8, AMAX_BITS, DESCALE, stride_qb, stride_qs, stride_qh, stride_kb, stride_ks,
                    stride_kh, stride_vb, stride_vs, stride_vh, stride_q8b, stride_q8s, stride_q8h, stride_q8d,
                    stride_k8b, stride_k8s, stride_k8h, stride_k8d, stride_v8b, stride_v8s, stride_v8h, stride_v8d,
                    seqlen_q, seqlen_k, head_dim, heads_q, heads_kv, start_k, start_v, fp8_max, qk_max,
                    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, ROUND_EMIN: tl.constexpr,
                    PERMUTE_V: tl.constexpr = False, COPY_Q: tl.constexpr = True):
    pid_s = tl.program_id(0)
    b = tl.program_id(2)
    t, h, slot = _which(tl.program_id(1), b, heads_q, heads_kv, start_k, start_v)
    if (pid_s > 0) & ((pid_s * BLOCK_S >= tl.where(t == 0, seqlen_q, seqlen_k)) | ((t == 0) & (not COPY_Q))):
        return                       # (program 0 of each head stays: it writes the descale)
    amax = tl.load(AMAX_BITS + slot).to(tl.float32, bitcast=True)
    # torch's fp8_max / amax.clamp_min(1e-12): a NaN amax stays NaN, a zero head gets 1e-12
    # (q and k to qk_max: the format's max, or less where the kernel's scores are f16 sums, F16_SCORES)
    target = tl.where(t == 2, fp8_max, qk_max)
    scale = tl.math.div_rn(target, tl.maximum(amax, 1e-12, propagate_nan=tl.PropagateNan.ALL))
    if pid_s == 0:
        tl.store(DESCALE + slot, tl.math.div_rn(1.0, scale))
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    if (t == 0) & COPY_Q:
        _quantize_tile(Q, Q8, scale, b, h, stride_qb, stride_qs, stride_qh, stride_q8b, stride_q8s, stride_q8h,
                       stride_q8d, seqlen_q, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN)
    elif t == 1:
        _quantize_tile(K, K8, scale, b, h, stride_kb, stride_ks, stride_kh, stride_k8b, stride_k8s, stride_k8h,
                       stride_k8d, seqlen_k, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN)
    elif t == 2:
        _quantize_tile(V, V8, scale, b, h, stride_vb, stride_vs, stride_vh, stride_v8b, stride_v8s, stride_v8h,
                       stride_v8d, seqlen_k, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN, PERMUTE_V)


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
             for t in (q8, k8, v8) if copy_q or t is not q8} if configs.INTERPRET else {}
    outs = tuple(temps.get(id(t), t) for t in (q8, k8, v8))      # (q8 itself, unwritten, without copy_q)
    if q8 is None:           # (none made: without copy_q nothing dereferences it, k8 stands in for it)
        outs = (outs[1], *outs[1:])
    block_s = 16 if configs.INTERPRET else 64
    grid = (_cdiv(max(sq, sk), block_s), hq + 2 * hkv, b)
    sizes = (sq, sk, d, hq, hkv, *fp8_slots(b, hq, hkv)[1:3])
    strides = (*q.stride()[:3], *k.stride()[:3], *v.stride()[:3])
    consts = dict(BLOCK_S=block_s, BLOCK_D=triton.next_power_of_2(d))
    _zero(amax_bits)
    _launch(amax_kernel, grid, (q, k, v, amax_bits, *strides, *sizes), consts)
    dtype = k8.dtype                                          # (q8's too: one fp8 type)
    emin = (-7 if dtype == torch.float8_e4m3fnuz else -6) if configs.INTERPRET else 0
    _launch(quantize_kernel, grid, (q, k, v, *outs, amax_bits, descale, *strides, *outs[0].stride(), *outs[1].stride(),
                                    *outs[2].stride(), *sizes, torch.finfo(dtype).max,
                                    qk_max or torch.finfo(dtype).max),
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

    One workspace, as each tensor made cost host time (5 us an empty, 12 us torch.zeros, 6 us a
    view on the H200's host: these 14 were 107 us of a 313 us replayed fp8 call, bench/results/
    h200-20261203-timeline call 3); it is the plan's slot, its parts taken by byte offset, so a
    replay makes it alone (fp8_workspace, at the size the plan recorded)."""
    return _carve(q.shape, k.shape, v.shape, configs.fp8_dtype(q.device), q.device, with_q8)


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
    return b * h * d * _keys_padded(s)


def _keys_contiguous_view(fp8: torch.Tensor, shape, offset: int) -> torch.Tensor:
    """A (B, S, H, D) view of flat fp8 memory from `offset` (elements), stored keys-contiguous with
    each row of keys padded to a multiple of 16, as empty_bshd makes it."""
    b, s, h, d = shape
    vb, vh, vd, _ = _contiguous_strides((b, h, d, _keys_padded(s)))
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
    row of keys padded to a multiple of 16 elements so that TMA can address it (fp8's v: rows of
    S bytes, which the Gluon forward could not take at S = 300)."""
    b, s, h, d = shape
    if keys_contiguous:
        return torch.empty((b, h, d, _keys_padded(s)), dtype=dtype, device=device)[..., :s].permute(0, 3, 1, 2)
    return torch.empty(shape, dtype=dtype, device=device)


def keys_contiguous(v: torch.Tensor) -> torch.Tensor:
    """v (B, S, H, D) with stride(1) == 1 (see forward.py), copied only when it is not already."""
    if v.stride(1) == 1 or v.shape[1] <= 1:
        return v
    return empty_bshd(v.shape, v.dtype, v.device, True).copy_(v)


@triton.jit
def keys_for_registers_kernel(V, V8, stride_b, stride_s, stride_h, stride_d, stride_8b, stride_8s, stride_8h,
                              stride_8d, seqlen, head_dim, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    """v's rows (BLOCK_S keys of one (batch, head)) to v8's key_position(s), as they are (bytes, no
    arithmetic), v8's keys written to a multiple of 16 (zeros past the last key);
    BLOCK_S a multiple of 16."""
    # as bytes: the interpreter's fp8 has no zero to fill masked loads with
    V, V8 = V.to(tl.pointer_type(tl.uint8)), V8.to(tl.pointer_type(tl.uint8))
    b, h = tl.program_id(2), tl.program_id(1)
    offs_s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d[None, :] < head_dim
    x = tl.load(V + wide(b) * stride_b + wide(h) * stride_h + wide(offs_s)[:, None] * stride_s
                + wide(offs_d)[None, :] * stride_d, mask=(offs_s[:, None] < seqlen) & d_ok, other=0)
    tl.store(V8 + wide(b) * stride_8b + wide(h) * stride_8h + wide(key_position(offs_s))[:, None] * stride_8s
             + wide(offs_d)[None, :] * stride_8d, x, mask=(offs_s[:, None] < tl.cdiv(seqlen, 16) * 16) & d_ok)


def keys_for_registers(v: torch.Tensor) -> tuple:
    """A caller's fp8 v (B, S, H, D), any layout, copied keys-contiguous in key_position's order
    with zeros past the last key to a multiple of 16 (empty_bshd's padded storage): what fa_ck's
    own quantisation writes for the Gluon forward's P in registers (PERMUTE_V), so a caller's fp8
    takes that kernel too. One launch moving bytes (torch's index_put of them was 144 us at
    B4 S4096 H16 d128 on the H200, h200-20261203-rescale call 5). Returns (the copy, the workspace
    it lies in: fp8_workspace's, a slot of the forward's plan, so that such calls replay)."""
    b, s, h, d = v.shape
    work = fp8_workspace(_round_up(_keys_contiguous_bytes(v.shape)), v.device)
    out = _keys_contiguous_view(work.view(v.dtype), v.shape, 0)
    if out.numel():
        block_s = 16 if configs.INTERPRET else 64
        dst = padded_keys(out)
        _launch(keys_for_registers_kernel, (_cdiv(_keys_padded(s), block_s), h, b),
                (v, dst, *v.stride(), *dst.stride(), s, d), dict(BLOCK_S=block_s, BLOCK_D=triton.next_power_of_2(d)))
    return out, work


def padded_keys(v8: torch.Tensor) -> torch.Tensor:
    """A keys-contiguous v from empty_bshd seen to its padded length (a multiple of 16 keys)."""
    b, s, h, d = v8.shape
    return v8.as_strided((b, _keys_padded(s), h, d), v8.stride())


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
    (fp8_buffers' tuple), permute_v: v8 in key_position's order (P_REGS); convert_q (the Gluon kernel's
    Q_CONVERT): q itself and its amax bits in place of q8 and q's descales, q8 left unwritten; qk_max
    (F16_SCORES): q's and k's scale to it (quantize)."""
    if q.dtype in FP8_DTYPES:
        return q, k, v, p.q_descale.contiguous(), p.k_descale.contiguous(), p.v_descale.contiguous()
    q8, k8, v8, amax_bits, descale, qd, kd, vd, q_amax, _ = buffers
    quantize(q, k, v, q8, k8, v8, amax_bits, descale, permute_v, copy_q=not convert_q, qk_max=qk_max)
    return (q, k8, v8, q_amax, kd, vd) if convert_q else (q8, k8, v8, qd, kd, vd)
