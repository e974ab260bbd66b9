"""Per-(batch, head) fp8 quantisation of q, k, v for the fp8 forward, in one pass over the input.

amax comes from one fused reduction (torch's inf-norm over sequence and head dim); the kernel
then reads x once and writes x * scale, clamped and rounded to the fp8 format, in whatever
layout the output view has (v is written keys-contiguous, see forward.py). Under the
interpreter (no fnuz type, a wrong fp32 -> fp8 cast: see common.fp8_round) the kernel rounds
onto the fp8 grid itself (ROUND_EMIN) and writes float32; the caller casts, exactly.
"""
import triton
import triton.language as tl

from .common import fp8_round, wide


@triton.jit
def quantize_kernel(X, X8, SCALE, stride_xb, stride_xs, stride_xh, stride_ob, stride_os, stride_oh, stride_od,
                    seqlen, head_dim, num_heads, fp8_max,
                    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, ROUND_EMIN: tl.constexpr):
    pid_s = tl.program_id(0)
    h = tl.program_id(1)
    b = tl.program_id(2)
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    ok = (offs_s[:, None] < seqlen) & (offs_d[None, :] < head_dim)
    rows = wide(offs_s)[:, None]                               # tensors past 2^31 elements
    x = tl.load(X + wide(b) * stride_xb + wide(h) * stride_xh + rows * stride_xs + offs_d[None, :],
                mask=ok, other=0.0).to(tl.float32)
    y = x * tl.load(SCALE + b * num_heads + h)
    y = tl.minimum(tl.maximum(y, -fp8_max), fp8_max)
    if ROUND_EMIN != 0:                                        # interpreter: round here
        y = fp8_round(y, ROUND_EMIN)
    tl.store(X8 + wide(b) * stride_ob + wide(h) * stride_oh + rows * stride_os + offs_d[None, :] * stride_od,
             y.to(X8.dtype.element_ty), mask=ok)
