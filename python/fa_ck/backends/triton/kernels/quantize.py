"""Per-(batch, head) fp8 quantisation of q, k and v for the fp8 forward: two launches over all three.

Program axis 1 runs over q's heads, then k's, then v's (which_tensor), so each kernel serves the three
tensors in one launch; a single tensor is quantised as "q" with no k or v heads. amax_kernel folds
max |x| of a tile into its (batch, head)'s int32 slot with an atomic max on the float's bits
(non-negative floats order as their bit patterns, and a NaN's pattern lies above +inf, so a NaN
input gives a NaN amax, as torch's reduction does). quantize_kernel then writes x * scale, clamped
and rounded to the fp8 format, in whatever layout the output view has, with scale = fp8 max / amax
and the descale 1 / scale computed with IEEE division: torch's arithmetic bit for bit. Under the
interpreter (no fnuz type, a wrong fp32 -> fp8 cast: common.fp8_round) it rounds onto the fp8
grid itself (ROUND_EMIN) and writes float32, which the caller casts exactly.

The amax and descale buffers hold q's (batch, head) slots, then k's from start_k, then v's from
start_v. PERMUTE_V (the Gluon fp8 forward's P in registers): v's key s is stored at
key_position(s), each row of keys written to a multiple of 16, zeros past the last key. COPY_Q off
(the Gluon fp8 forward rounds q itself): q's amax and descale only, no q8.
"""
import triton
import triton.language as tl

from .common import fp8_round, wide


@triton.jit
def which_tensor(j, b, heads_q, heads_kv, start_k, start_v):
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
    of 16 keys, bits 1-2 of s move to bits 2-3 and bit 3 to bit 1 (forward_gluon.p_key_order
    reorders P's keys the same way)."""
    return (s & ~15) | ((s & 6) << 1) | ((s & 8) >> 2) | (s & 1)


@triton.jit
def _load(X, b, h, x_strides, seqlen, head_dim, offs_s, offs_d):
    """Rows offs_s, columns offs_d of head h of batch b in fp32 (zeros where they do not exist),
    and which exist. x_strides: (batch, seq, head)."""
    stride_b, stride_s, stride_h = x_strides
    ok = (offs_s[:, None] < seqlen) & (offs_d[None, :] < head_dim)
    x = tl.load(X + wide(b) * stride_b + wide(h) * stride_h + wide(offs_s)[:, None] * stride_s + offs_d[None, :],
                mask=ok, other=0.0)
    return x.to(tl.float32), ok


@triton.jit
def _amax_bits(X, b, h, x_strides, seqlen, head_dim, offs_s, offs_d):
    x, _ = _load(X, b, h, x_strides, seqlen, head_dim, offs_s, offs_d)
    return tl.max(tl.max(tl.abs(x).to(tl.int32, bitcast=True), 1), 0)


@triton.jit
def amax_kernel(Q, K, V, AMAX_BITS, q_strides, k_strides, v_strides, seqlen_q, seqlen_k, head_dim, heads_q, heads_kv,
                start_k, start_v, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(2)
    t, h, slot = which_tensor(tl.program_id(1), b, heads_q, heads_kv, start_k, start_v)
    if tl.program_id(0) * BLOCK_S >= tl.where(t == 0, seqlen_q, seqlen_k):
        return                       # (axis 0 spans the longer of q and k: decoding's one query)
    offs_s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    # (each tensor's whole tile inside its own branch: a tile of pointers chosen between branches
    # would be kept in registers, 254 of them per thread on sm90)
    if t == 0:
        bits = _amax_bits(Q, b, h, q_strides, seqlen_q, head_dim, offs_s, offs_d)
    elif t == 1:
        bits = _amax_bits(K, b, h, k_strides, seqlen_k, head_dim, offs_s, offs_d)
    else:
        bits = _amax_bits(V, b, h, v_strides, seqlen_k, head_dim, offs_s, offs_d)
    tl.atomic_max(AMAX_BITS + slot, bits)


@triton.jit
def _quantize_tile(X, X8, scale, b, h, x_strides, x8_strides, seqlen, head_dim, fp8_max, offs_s, offs_d,
                   ROUND_EMIN: tl.constexpr, PERMUTE: tl.constexpr = False):
    """x8_strides: all four of X8's, (batch, seq, head, head dim)."""
    stride_8b, stride_8s, stride_8h, stride_8d = x8_strides
    x, ok = _load(X, b, h, x_strides, seqlen, head_dim, offs_s, offs_d)
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
def quantize_kernel(Q, K, V, Q8, K8, V8, AMAX_BITS, DESCALE, q_strides, k_strides, v_strides,
                    q8_strides, k8_strides, v8_strides,
                    seqlen_q, seqlen_k, head_dim, heads_q, heads_kv, start_k, start_v, fp8_max, qk_max,
                    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, ROUND_EMIN: tl.constexpr,
                    PERMUTE_V: tl.constexpr = False, COPY_Q: tl.constexpr = True):
    pid_s = tl.program_id(0)
    b = tl.program_id(2)
    t, h, slot = which_tensor(tl.program_id(1), b, heads_q, heads_kv, start_k, start_v)
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
        _quantize_tile(Q, Q8, scale, b, h, q_strides, q8_strides, seqlen_q, head_dim, fp8_max, offs_s, offs_d,
                       ROUND_EMIN)
    elif t == 1:
        _quantize_tile(K, K8, scale, b, h, k_strides, k8_strides, seqlen_k, head_dim, fp8_max, offs_s, offs_d,
                       ROUND_EMIN)
    elif t == 2:
        _quantize_tile(V, V8, scale, b, h, v_strides, v8_strides, seqlen_k, head_dim, fp8_max, offs_s, offs_d,
                       ROUND_EMIN, PERMUTE_V)


@triton.jit
def keys_for_registers_kernel(V, V8, v_strides, v8_strides, seqlen, head_dim, BLOCK_S: tl.constexpr,
                              BLOCK_D: tl.constexpr):
    """v's rows (BLOCK_S keys of one (batch, head)) to v8's key_position(s), as they are (bytes, no
    arithmetic), v8's keys written to a multiple of 16 (zeros past the last key);
    BLOCK_S a multiple of 16. Strides: all four of each tensor's."""
    stride_b, stride_s, stride_h, stride_d = v_strides
    stride_8b, stride_8s, stride_8h, stride_8d = v8_strides
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
