"""Per-(batch, head) fp8 quantisation of q, k, v for the fp8 forward: two passes over the input.

amax_kernel reads x once and folds max |x| of its tile into its (batch, head)'s int32 slot with
an atomic max on the float's bits (non-negative floats order as their bit patterns, and a NaN's
pattern lies above +inf, so a NaN input gives a NaN amax, as torch's reduction does). It was
torch's inf-norm, 74 us per 64 MB tensor on the H200 (0.9 TB/s; bench/results/h200-20261130-eighth
call 2). quantize_kernel then reads x again and writes x * scale, clamped and rounded to the fp8
format, in whatever layout the output view has (v is written keys-contiguous, see forward.py),
scale = fp8 max / amax and the descale 1 / scale computed in-kernel with IEEE division, so every
value is torch's arithmetic bit for bit. Under the interpreter (no fnuz type, a wrong fp32 -> fp8
cast: see common.fp8_round) the kernel rounds onto the fp8 grid itself (ROUND_EMIN) and writes
float32; the caller casts, exactly.
"""
import triton
import triton.language as tl

from .common import fp8_round, wide


@triton.jit
def amax_kernel(X, AMAX_BITS, stride_xb, stride_xs, stride_xh, seqlen, head_dim, num_heads,
                BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    pid_s = tl.program_id(0)
    h = tl.program_id(1)
    b = tl.program_id(2)
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    ok = (offs_s[:, None] < seqlen) & (offs_d[None, :] < head_dim)
    x = tl.load(X + wide(b) * stride_xb + wide(h) * stride_xh + wide(offs_s)[:, None] * stride_xs + offs_d[None, :],
                mask=ok, other=0.0).to(tl.float32)
    bits = tl.max(tl.max(tl.abs(x).to(tl.int32, bitcast=True), 1), 0)
    tl.atomic_max(AMAX_BITS + b * num_heads + h, bits)


@triton.jit
def quantize_kernel(X, X8, AMAX_BITS, DESCALE, stride_xb, stride_xs, stride_xh, stride_ob, stride_os, stride_oh,
                    stride_od, seqlen, head_dim, num_heads, fp8_max,
                    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, ROUND_EMIN: tl.constexpr):
    pid_s = tl.program_id(0)
    h = tl.program_id(1)
    b = tl.program_id(2)
    amax = tl.load(AMAX_BITS + b * num_heads + h).to(tl.float32, bitcast=True)
    # torch's fp8_max / amax.clamp_min(1e-12): a NaN amax stays NaN, a zero head gets 1e-12
    scale = tl.math.div_rn(fp8_max, tl.maximum(amax, 1e-12, propagate_nan=tl.PropagateNan.ALL))
    if pid_s == 0:
        tl.store(DESCALE + b * num_heads + h, tl.math.div_rn(1.0, scale))
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    ok = (offs_s[:, None] < seqlen) & (offs_d[None, :] < head_dim)
    rows = wide(offs_s)[:, None]                               # tensors past 2^31 elements
    x = tl.load(X + wide(b) * stride_xb + wide(h) * stride_xh + rows * stride_xs + offs_d[None, :],
                mask=ok, other=0.0).to(tl.float32)
    y = x * scale
    # clamped as torch.clamp does it: NaN stays NaN (a NaN head is NaN, not -fp8_max)
    y = tl.minimum(tl.maximum(y, -fp8_max, propagate_nan=tl.PropagateNan.ALL), fp8_max,
                   propagate_nan=tl.PropagateNan.ALL)
    if ROUND_EMIN != 0:                                        # interpreter: round here
        y = fp8_round(y, ROUND_EMIN)
    tl.store(X8 + wide(b) * stride_ob + wide(h) * stride_oh + rows * stride_os + offs_d[None, :] * stride_od,
             y.to(X8.dtype.element_ty), mask=ok)
