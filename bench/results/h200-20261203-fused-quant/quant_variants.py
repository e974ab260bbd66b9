"""A variant of quantize.py's kernel for call 2 (quant_lab.py), to find where its time goes: how a
quantising item waits for its slot's amax items (SPIN): "atomic" (quantize.py's: an atomic read
of the count per turn), "volatile" (plain volatile loads of the count, one atomic read after it
is complete: fewer atomics on the address the amax items count on), "none" (no wait at all:
WRONG scales whenever an item runs early; a bound on what waiting costs, never a result);
and the L2 eviction policy of the amax items' loads (EVICT_A) and the quantising items' (EVICT_Q): evict_last / evict_first, so the slot stays in L2 for its re-read."""
import triton
import triton.language as tl

from fa_ck.backends.triton.common import wide
from fa_ck.backends.triton.quantize import _which, key_position
from quantize_fused import _scale, _step


# quantize.py's helpers with the loads' eviction policy passed (always: a str constexpr's default
# does not reach a nested call in Triton 3.6)
@triton.jit
def _load(X, b, h, stride_b, stride_s, stride_h, seqlen, head_dim, offs_s, offs_d, EVICT: tl.constexpr):
    ok = (offs_s[:, None] < seqlen) & (offs_d[None, :] < head_dim)
    x = tl.load(X + wide(b) * stride_b + wide(h) * stride_h + wide(offs_s)[:, None] * stride_s + offs_d[None, :],
                mask=ok, other=0.0, eviction_policy=EVICT)
    return x.to(tl.float32), ok


@triton.jit
def _amax_bits(X, b, h, stride_b, stride_s, stride_h, seqlen, head_dim, offs_s, offs_d, EVICT: tl.constexpr):
    x, _ = _load(X, b, h, stride_b, stride_s, stride_h, seqlen, head_dim, offs_s, offs_d, EVICT)
    return tl.max(tl.max(tl.abs(x).to(tl.int32, bitcast=True), 1), 0)


@triton.jit
def _quantize_tile(X, X8, scale, b, h, stride_b, stride_s, stride_h, stride_8b, stride_8s, stride_8h, stride_8d,
                   seqlen, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN: tl.constexpr, PERMUTE: tl.constexpr,
                   EVICT: tl.constexpr):
    x, ok = _load(X, b, h, stride_b, stride_s, stride_h, seqlen, head_dim, offs_s, offs_d, EVICT)
    rows = offs_s
    if PERMUTE:
        ok = (offs_s[:, None] < tl.cdiv(seqlen, 16) * 16) & (offs_d[None, :] < head_dim)
        rows = key_position(offs_s)
    y = x * scale
    y = tl.minimum(tl.maximum(y, -fp8_max, propagate_nan=tl.PropagateNan.ALL), fp8_max,
                   propagate_nan=tl.PropagateNan.ALL)
    tl.store(X8 + wide(b) * stride_8b + wide(h) * stride_8h + wide(rows)[:, None] * stride_8s
             + wide(offs_d)[None, :] * stride_8d, y.to(X8.dtype.element_ty), mask=ok)


@triton.jit
def variant_kernel(Q, K, V, Q8, K8, V8, WORK, DESCALE, stride_qb, stride_qs, stride_qh, stride_kb, stride_ks,
                   stride_kh, stride_vb, stride_vs, stride_vh, stride_q8b, stride_q8s, stride_q8h, stride_q8d,
                   stride_k8b, stride_k8s, stride_k8h, stride_k8d, stride_v8b, stride_v8s, stride_v8h, stride_v8d,
                   seqlen_q, seqlen_k, head_dim, heads_q, heads_kv, start_k, start_v, batch, done_at, lag, fp8_max,
                   BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, ROUND_EMIN: tl.constexpr,
                   PERMUTE_V: tl.constexpr, SPIN: tl.constexpr, EVICT_A: tl.constexpr, EVICT_Q: tl.constexpr):
    heads = heads_q + 2 * heads_kv
    blocks = tl.cdiv(tl.maximum(seqlen_q, seqlen_k), BLOCK_S)
    ticket = tl.atomic_add(WORK + 2 * done_at, 1)
    quantise, s = _step(ticket // blocks, batch * heads, lag)
    blk = ticket % blocks
    b = s // heads
    t, h, slot = _which(s % heads, b, heads_q, heads_kv, start_k, start_v)
    offs_s = blk * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    inside = blk * BLOCK_S < tl.where(t == 0, seqlen_q, seqlen_k)
    if quantise == 0:
        if inside:
            if t == 0:
                bits = _amax_bits(Q, b, h, stride_qb, stride_qs, stride_qh, seqlen_q, head_dim, offs_s, offs_d, EVICT_A)
            elif t == 1:
                bits = _amax_bits(K, b, h, stride_kb, stride_ks, stride_kh, seqlen_k, head_dim, offs_s, offs_d, EVICT_A)
            else:
                bits = _amax_bits(V, b, h, stride_vb, stride_vs, stride_vh, seqlen_k, head_dim, offs_s, offs_d, EVICT_A)
            tl.atomic_max(WORK + slot, bits)
        tl.atomic_add(WORK + done_at + slot, 1)
    elif inside | (blk == 0):
        if SPIN == "atomic":
            done = tl.atomic_add(WORK + done_at + slot, 0)
            while done < blocks:
                done = tl.atomic_add(WORK + done_at + slot, 0)
        elif SPIN == "volatile":
            done = tl.load(WORK + done_at + slot, volatile=True)
            while done < blocks:
                done = tl.load(WORK + done_at + slot, volatile=True)
            tl.atomic_add(WORK + done_at + slot, 0)        # acquire
        scale = _scale(WORK, slot, fp8_max)
        if blk == 0:
            tl.store(DESCALE + slot, tl.math.div_rn(1.0, scale))
        if t == 0:
            _quantize_tile(Q, Q8, scale, b, h, stride_qb, stride_qs, stride_qh, stride_q8b, stride_q8s,
                           stride_q8h, stride_q8d, seqlen_q, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN, False, EVICT_Q)
        elif t == 1:
            _quantize_tile(K, K8, scale, b, h, stride_kb, stride_ks, stride_kh, stride_k8b, stride_k8s,
                           stride_k8h, stride_k8d, seqlen_k, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN, False, EVICT_Q)
        else:
            _quantize_tile(V, V8, scale, b, h, stride_vb, stride_vs, stride_vh, stride_v8b, stride_v8s,
                           stride_v8h, stride_v8d, seqlen_k, head_dim, fp8_max, offs_s, offs_d, ROUND_EMIN,
                           PERMUTE_V, EVICT_Q)
