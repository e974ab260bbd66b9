# The one-launch fp8 quantisation as measured in calls 1-3 of this folder, where it was the tree's
# python/fa_ck/backends/triton/quantize.py (not kept: 2-5 % less GPU time than the two launches;
# bench/results/README.md, "third part"). Only what differed is here; the rest is the package's.
# quant_ab.py and quant_lab.py import it as `tq`.
"""Per-(batch, head) fp8 quantisation of q, k and v for the fp8 forward, in one launch.

The quantised copy needs its (batch, head)'s amax before it writes a value, so the data is read
twice: once for the amax, once for the copy. Two launches (one per pass, each over all three
tensors) read it from memory both times: 123 us at 16k tokens of bf16 d128 on the H200 (amax
54.5, copy 68.9; bench/results h200-20261201-sixteenth), ~15 % of an fp8 forward at 4k keys.
Here one persistent launch runs both passes over (batch, head) slots in a moving window, so a
slot's second read comes soon after its first, from L2, not from memory:

    amax(0) .. amax(lag - 1), amax(lag), quantise(0), amax(lag + 1), quantise(1), ...

Each step is split into row blocks (work items), one program each; a program takes its item
from a ticket counter when it starts, not from its program id, so items start in that order
(what the GPU schedules first is not program 0). A quantising item waits (spins) until every
amax item of its slot has counted itself done. That cannot deadlock, whatever runs when: the
items it waits on have lower tickets, so they were taken by programs already running, and amax
items wait on nothing. (A persistent loop over tickets was the first form: Triton 3.6 kept
254 registers per thread in it, 72 in 3.7.) Under the interpreter, programs run one after
another and take the tickets in order, so none waits.

amax items fold max |x| into their slot's int32 with an atomic max on the float's bits
(non-negative floats order as their bit patterns, and a NaN's pattern lies above +inf, so a NaN
input gives a NaN amax, as torch's reduction does). Quantising items write x * scale, clamped and
rounded to the fp8 format, in whatever layout the output view has (v is written keys-contiguous,
see forward.py), scale = fp8 max / amax and the descale 1 / scale computed in-kernel with IEEE
division, so every value is torch's arithmetic bit for bit. Under the interpreter (no fnuz type, a
wrong fp32 -> fp8 cast: see common.fp8_round) the kernel rounds onto the fp8 grid itself
(ROUND_EMIN) and writes float32; the caller casts, exactly.

The work buffer (int32 zeros) holds each slot's amax bits, then from `done_at` each slot's count
of finished amax items, then the ticket counter; amax and descale slots are q's (batch, head)
slots, then k's from start_k, then v's from start_v, each (B, H) in row-major order. A single
tensor is quantised as "q" with no k or v heads.

PERMUTE_V (the Gluon fp8 forward's P_REGS): v's key s is stored at key_position(s), and each row
of keys is written to a multiple of 16, zeros past the last key (the forward reads whole groups).

The host side below makes what quantising writes (fp8_buffers) before a forward's plan key, so
fp8 calls of 16-bit inputs replay, and hands the forward its fp8 inputs (fp8_inputs).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from fa_ck.backends.triton import configs
from fa_ck.backends.triton.host import _cdiv
from fa_ck.backends.triton.plans import _launch
from fa_ck.backends.triton.quantize import (_amax_bits, _quantize_tile, _which, empty_bshd, fp8_slots,  # noqa: F401
                                            padded_keys)

# the window: a slot's copy starts this many bytes of amax reads after its amax (at least one
# slot); more than the reads in flight (~132 SMs x ~8 programs x a 16 KB item), well under L2
LAG_BYTES = 8 << 20


@triton.jit
def _step(k, n, lag):
    """Step k of the schedule over n slots (lag <= n) -> (pass: 0 amax, 1 quantise; slot index)."""
    i = k - lag
    mid = (k >= lag) & (k < 2 * n - lag)
    quantise = tl.where(k < lag, 0, tl.where(mid, i % 2, 1))
    s = tl.where(k < lag, k, tl.where(mid, tl.where(i % 2 == 0, lag + i // 2, i // 2), k - n))
    return quantise, s


@triton.jit
def _scale(WORK, slot, fp8_max):
    """The slot's scale, torch's fp8_max / amax.clamp_min(1e-12): a NaN amax stays NaN, a zero head
    gets 1e-12 (the amax read by an atomic: it was written by other programs)."""
    amax = tl.atomic_max(WORK + slot, 0).to(tl.float32, bitcast=True)
    return tl.math.div_rn(fp8_max, tl.maximum(amax, 1e-12, propagate_nan=tl.PropagateNan.ALL))


@triton.jit
def quantize_kernel(Q, K, V, Q8, K8, V8, WORK, DESCALE, stride_qb, stride_qs, stride_qh, stride_kb, stride_ks,
                    stride_kh, stride_vb, stride_vs, stride_vh, stride_q8b, stride_q8s, stride_q8h, stride_q8d,
                    stride_k8b, stride_k8s, stride_k8h, stride_k8d, stride_v8b, stride_v8s, stride_v8h, stride_v8d,
                    seqlen_q, seqlen_k, head_dim, heads_q, heads_kv, start_k, start_v, batch, done_at, lag, fp8_max,
                    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, ROUND_EMIN: tl.constexpr,
                    PERMUTE_V: tl.constexpr = False):
    heads = heads_q + 2 * heads_kv
    blocks = tl.cdiv(tl.maximum(seqlen_q, seqlen_k), BLOCK_S)      # work items per slot and pass
    # the item is the ticket's, not the program id's: tickets go out in the order programs start
    ticket = tl.atomic_add(WORK + 2 * done_at, 1)
    quantise, s = _step(ticket // blocks, batch * heads, lag)
    blk = ticket % blocks
    b = s // heads
    t, h, slot = _which(s % heads, b, heads_q, heads_kv, start_k, start_v)
    offs_s = blk * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    inside = blk * BLOCK_S < tl.where(t == 0, seqlen_q, seqlen_k)   # (blocks span the longer tensor)
    if quantise == 0:
        # (each tensor's whole tile inside its own branch: a tile of pointers chosen between
        # branches would be kept in registers, 254 of them per thread on sm90)
        if inside:
            if t == 0:
                bits = _amax_bits(Q, b, h, stride_qb, stride_qs, stride_qh, seqlen_q, head_dim, offs_s, offs_d)
            elif t == 1:
                bits = _amax_bits(K, b, h, stride_kb, stride_ks, stride_kh, seqlen_k, head_dim, offs_s, offs_d)
            else:
                bits = _amax_bits(V, b, h, stride_vb, stride_vs, stride_vh, seqlen_k, head_dim, offs_s, offs_d)
            tl.atomic_max(WORK + slot, bits)
        tl.atomic_add(WORK + done_at + slot, 1)            # (acq_rel: after the max, seen with it)
    elif inside | (blk == 0):                              # (block 0 of each slot writes the descale)
        done = tl.atomic_add(WORK + done_at + slot, 0)
        while done < blocks:                               # the slot's amax items still running
            done = tl.atomic_add(WORK + done_at + slot, 0)
        scale = _scale(WORK, slot, fp8_max)
        if blk == 0:
            tl.store(DESCALE + slot, tl.math.div_rn(1.0, scale))
        if t == 0:
            _quantize_tile(Q, Q8, scale, b, h, stride_qb, stride_qs, stride_qh, stride_q8b, stride_q8s,
                           stride_q8h, stride_q8d, seqlen_q, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN)
        elif t == 1:
            _quantize_tile(K, K8, scale, b, h, stride_kb, stride_ks, stride_kh, stride_k8b, stride_k8s,
                           stride_k8h, stride_k8d, seqlen_k, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN)
        else:
            _quantize_tile(V, V8, scale, b, h, stride_vb, stride_vs, stride_vh, stride_v8b, stride_v8s,
                           stride_v8h, stride_v8d, seqlen_k, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN,
                           PERMUTE_V)


def quantize(q, k, v, q8, k8, v8, work, descale, permute_v: bool = False):
    """q, k, v (k and v None: q alone) quantised into q8, k8, v8 (any layout; fp8) in one launch of
    quantize_kernel; work (int32 zeros: 2 * fp8_slots' length + 4) and descale (float32) hold q's
    (batch, head) slots, then k's and v's, each from the next multiple of 4 (see fp8_buffers).
    permute_v: v8 (keys-contiguous, from empty_bshd) written in key_position's order, its padding
    too (PERMUTE_V)."""
    alone = k is None
    if alone:
        k, v, k8, v8 = q, q, q8, q8                           # (no items for them: no k or v heads)
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], (0 if alone else k.shape[2])
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    # the interpreter has no fnuz type and a wrong fp32 -> fp8 cast: there the kernel writes the
    # values already on the fp8 grid in float32, and torch's cast of them is exact
    # (permute_v writes v8's padding too, past its shape: v8 itself goes to the kernel, as a plan
    # replays only its slots, and the interpreter's stand-in covers the padding)
    padded = {id(v8): padded_keys(v8)} if permute_v else {}
    temps = {id(t): torch.empty_strided(padded.get(id(t), t).shape, t.stride(), dtype=torch.float32, device=t.device)
             for t in (q8, k8, v8)} if configs.INTERPRET else {}
    outs = tuple(temps.get(id(t), t) for t in (q8, k8, v8))
    block_s = 16 if configs.INTERPRET else 64
    _, start_k, start_v, n_slots = fp8_slots(b, hq, hkv)
    slots, items = b * (hq + 2 * hkv), _cdiv(max(sq, sk), block_s)
    slot_bytes = max(sq, sk) * d * q.element_size()
    lag = min(max(-(-LAG_BYTES // max(slot_bytes, 1)), 1), slots)
    dtype = q8.dtype
    _launch(quantize_kernel, (2 * slots * items,),
            (q, k, v, *outs, work, descale, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *outs[0].stride(),
             *outs[1].stride(), *outs[2].stride(), sq, sk, d, hq, hkv, start_k, start_v, b, n_slots, lag,
             torch.finfo(dtype).max),
            dict(BLOCK_S=block_s, BLOCK_D=triton.next_power_of_2(d),
                 ROUND_EMIN=(-7 if dtype == torch.float8_e4m3fnuz else -6) if configs.INTERPRET else 0,
                 PERMUTE_V=permute_v))
    for x8 in {id(t): t for t in (q8, k8, v8)}.values() if temps else ():
        padded.get(id(x8), x8).copy_(temps[id(x8)])


def fp8_buffers(q, k, v) -> tuple:
    """What quantising q, k and v writes, made before the forward's plan key (they are slots of its
    replay plan): q8, k8, v8 (v keys-contiguous), the work buffer (int32 zeros) and descales of
    all three, and the descales' views per tensor, (B, Hq), (B, Hkv), (B, Hkv), which the forward
    reads."""
    dtype = configs.fp8_dtype(q.device)
    b, hq, hkv = q.shape[0], q.shape[2], k.shape[2]
    *starts, n = fp8_slots(b, hq, hkv)
    descale = torch.empty(n, dtype=torch.float32, device=q.device)
    return (empty_bshd(q.shape, dtype, q.device, False), empty_bshd(k.shape, dtype, k.device, False),
            empty_bshd(v.shape, dtype, v.device, True), torch.zeros(2 * n + 4, dtype=torch.int32, device=q.device),
            descale, *(descale[lo:lo + b * h].view(b, h) for lo, h in zip(starts, (hq, hkv, hkv))))
