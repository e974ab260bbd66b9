"""FlashAttention-2 forward: one program per (query block, head, batch), online softmax in exp2.

Key blocks are walked in up to three ranges (see common.key_blocks): blocks that straddle a
mask edge apply the mask, whole visible blocks skip it. Features are constexpr switches.
RAW_MAX (no softcap, ALiBi or fp8; scale > 0): the row max is of the raw scores (common.softmax_step).

FP8: q, k, v arrive in an e4m3 format with per-(batch, head) descale factors (v stored with
keys contiguous, stride_vd = seqlen: fp8 wgmma/MFMA read both operands K-major). QK^T runs in
fp8 with fp32 accumulation, the descales are folded into the score scale, and P (in [0, 1])
is multiplied by P_SCALE (the format's max), rounded to fp8 and multiplied with v in fp8;
the output divides by P_SCALE and multiplies by v's descale. Softmax statistics stay fp32.
Under the interpreter (DOT_F32) the tiles are upcast to fp32 and P is rounded to the fp8
grid by common.fp8_round, so the interpreter computes the numbers the GPU computes.
"""
import triton
import triton.language as tl

from .common import (dropout_keep, fp8_round, head_constants, head_ptr, key_blocks, load_tile, query_block,
                     scores, softmax_step, tma_rows, wide)


@triton.jit
def _fwd_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, k_offs, v_offs, k_desc, v_desc, start, end, offs_m, offs_n0, d_ok,
                stride_ks, stride_vs, seqlen_q, seqlen_k, scale_log2, softcap_in, softcap_out,
                slope_log2, window_left, window_right, seed, rng_row, dropout_p,
                BLOCK_N: tl.constexpr, EVEN_D: tl.constexpr, SOFTCAP: tl.constexpr, ALIBI: tl.constexpr,
                MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr, DROPOUT: tl.constexpr,
                DOT_F32: tl.constexpr, MASKED: tl.constexpr, FP8: tl.constexpr, P_SCALE: tl.constexpr,
                TMA: tl.constexpr, RAW_MAX: tl.constexpr):
    k_ptrs += wide(start) * stride_ks
    v_ptrs += wide(start) * stride_vs
    for n0 in range(start, end, BLOCK_N):
        offs_n = n0 + offs_n0
        if TMA:       # rows past the sequence and columns past the head dim arrive as zeros
            kt = k_desc.load([n0, 0]).T
            if FP8:
                v = v_desc.load([0, n0]).T    # stored keys-contiguous
            else:
                v = v_desc.load([n0, 0])
        else:
            kt = load_tile(k_ptrs, k_offs, offs_n[None, :] < seqlen_k, d_ok[:, None], MASKED, EVEN_D)
            v = load_tile(v_ptrs, v_offs, offs_n[:, None] < seqlen_k, d_ok[None, :], MASKED, EVEN_D)
        if DOT_F32:
            kt = kt.to(tl.float32)
        qk = tl.dot(q, kt)
        s, _ = scores(qk, offs_m[:, None], offs_n[None, :], seqlen_q, seqlen_k, 1.0 if RAW_MAX else scale_log2,
                      softcap_in, softcap_out, slope_log2, window_left, window_right,
                      SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT, MASKED)
        # the empty-row guard (a per-row select) in every range, the unmasked one too: without it
        # there the sm90 fp8 kernel spills twice the bytes
        p, alpha, m_new = softmax_step(s, m_i, scale_log2, RAW_MAX, True)
        l_i = l_i * alpha + tl.sum(p, 1)
        if DROPOUT:
            keep = dropout_keep(seed, offs_m[:, None], offs_n[None, :], rng_row, dropout_p)
            p = tl.where(keep, p, 0.0)
        if FP8:
            p = p * P_SCALE                   # [0, 1] -> [0, fp8 max]
            if DOT_F32:
                if P_SCALE == 448.0:
                    p = fp8_round(p, -6)      # e4m3fn
                else:
                    p = fp8_round(p, -7)      # e4m3fnuz (max 240)
                acc = acc * alpha[:, None] + tl.dot(p, v.to(tl.float32))
            else:
                acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        elif DOT_F32:
            acc = acc * alpha[:, None] + tl.dot(p, v.to(tl.float32))
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
        k_ptrs += BLOCK_N * stride_ks
        v_ptrs += BLOCK_N * stride_vs
    return acc, l_i, m_i


@triton.jit
def fwd_kernel(Q, K, V, O, LSE, SLOPES, RNG, CU_Q, CU_K, QD, KD, VD,
               q_strides, k_strides, v_strides, o_strides, lse_strides, stride_sb, descale_strides,
               seqlen_q, seqlen_k, group, head_dim, softmax, window, dropout_p, rng_row,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
               EVEN_D: tl.constexpr, VARLEN: tl.constexpr, SOFTCAP: tl.constexpr, ALIBI: tl.constexpr,
               MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr, DROPOUT: tl.constexpr,
               DOT_F32: tl.constexpr, FP8: tl.constexpr = False, P_SCALE: tl.constexpr = 1.0,
               TMA: tl.constexpr = False, RAW_MAX: tl.constexpr = False):
    """Strides per tensor: (batch, seq, head), v's with its head-dim stride last, lse's (batch, head),
    the fp8 descales' batch strides (q's, k's and v's); softmax: (scale_log2, softcap_in, softcap_out)."""
    stride_qb, stride_qs, stride_qh = q_strides
    stride_kb, stride_ks, stride_kh = k_strides
    stride_vb, stride_vs, stride_vh, stride_vd = v_strides
    stride_ob, stride_os, stride_oh = o_strides
    stride_lb, stride_lh = lse_strides
    stride_qdb, stride_kdb = descale_strides
    scale_log2, softcap_in, softcap_out = softmax
    window_left, window_right = window
    m0, h, b, num_heads, q_start, k_start, seqlen_q, seqlen_k = query_block(CU_Q, CU_K, seqlen_q, seqlen_k,
                                                                            BLOCK_M, VARLEN)
    if m0 >= seqlen_q:
        return
    hk = h // group
    b64 = b.to(tl.int64)
    # int64 bases (this block's first row), 32-bit offsets within a tile
    q_base = head_ptr(Q, b64, h, stride_qb, stride_qh) + (q_start + m0) * stride_qs
    k_base = head_ptr(K, b64, hk, stride_kb, stride_kh) + k_start * stride_ks
    v_base = head_ptr(V, b64, hk, stride_vb, stride_vh) + k_start * stride_vs
    o_base = head_ptr(O, b64, h, stride_ob, stride_oh) + (q_start + m0) * stride_os

    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    q_ok = (offs_m[:, None] < seqlen_q) & d_ok[None, :]
    rows = tl.arange(0, BLOCK_M)
    q = tl.load(q_base + rows[:, None] * stride_qs + offs_d[None, :], mask=q_ok, other=0.0)
    if DOT_F32:
        q = q.to(tl.float32)
    # Scalar base pointers walk the key blocks; the tile offsets stay 32-bit. (A 2-D tensor of
    # 64-bit pointers live across the loop costs two registers per element and spills.)
    k_offs = offs_n0[None, :] * stride_ks + offs_d[:, None]
    # stride_vd is 1 (specialised away) except for fp8, whose v is stored keys-contiguous: the
    # fp8 matrix instructions want PV's reduction dim (keys) contiguous in shared memory.
    v_offs = offs_n0[:, None] * stride_vs + offs_d[None, :] * stride_vd

    k_desc = k_base
    v_desc = v_base
    if TMA:                                  # built per sequence: varlen bounds come free
        k_desc = tma_rows(k_base, seqlen_k, head_dim, stride_ks, BLOCK_N, BLOCK_D)
        if FP8:                              # v stored keys-contiguous: (head_dim, keys) tiles
            v_desc = tma_rows(v_base, head_dim, seqlen_k, stride_vd, BLOCK_D, BLOCK_N)
        else:
            v_desc = tma_rows(v_base, seqlen_k, head_dim, stride_vs, BLOCK_N, BLOCK_D)

    v_descale = 1.0
    if FP8:
        # descales (B, Hq) for q, (B, Hkv) for k and v, heads contiguous
        qk_descale = tl.load(QD + b64 * stride_qdb + h) * tl.load(KD + b64 * stride_kdb + hk)
        scale_log2 = scale_log2 * qk_descale
        softcap_in = softcap_in * qk_descale
        v_descale = tl.load(VD + b64 * stride_kdb + hk)
    slope_log2, seed = head_constants(SLOPES, RNG, b, h, num_heads, stride_sb, ALIBI, DROPOUT)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    lo, full_lo, full_hi, hi = key_blocks(m0, seqlen_q, seqlen_k, window_left, window_right,
                                          BLOCK_M, BLOCK_N, MASK_LEFT, MASK_RIGHT)
    acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, k_offs, v_offs, k_desc, v_desc,
                                lo, full_lo, offs_m, offs_n0, d_ok,
                                stride_ks, stride_vs, seqlen_q, seqlen_k, scale_log2, softcap_in,
                                softcap_out, slope_log2, window_left, window_right, seed, rng_row,
                                dropout_p, BLOCK_N, EVEN_D, SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT,
                                DROPOUT, DOT_F32, True, FP8, P_SCALE, TMA, RAW_MAX)
    acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, k_offs, v_offs, k_desc, v_desc,
                                full_lo, full_hi, offs_m, offs_n0, d_ok,
                                stride_ks, stride_vs, seqlen_q, seqlen_k, scale_log2, softcap_in,
                                softcap_out, slope_log2, window_left, window_right, seed, rng_row,
                                dropout_p, BLOCK_N, EVEN_D, SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT,
                                DROPOUT, DOT_F32, False, FP8, P_SCALE, TMA, RAW_MAX)
    acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, k_offs, v_offs, k_desc, v_desc,
                                full_hi, hi, offs_m, offs_n0, d_ok,
                                stride_ks, stride_vs, seqlen_q, seqlen_k, scale_log2, softcap_in,
                                softcap_out, slope_log2, window_left, window_right, seed, rng_row,
                                dropout_p, BLOCK_N, EVEN_D, SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT,
                                DROPOUT, DOT_F32, True, FP8, P_SCALE, TMA, RAW_MAX)

    empty = l_i == 0.0                       # the row saw no key: out 0, lse -inf
    inv_l = tl.where(empty, 0.0, 1.0 / tl.where(empty, 1.0, l_i))
    if DROPOUT:
        inv_l = inv_l / (1.0 - dropout_p)
    if FP8:
        inv_l = inv_l * (v_descale / P_SCALE)
    out = acc * inv_l[:, None]
    tl.store(o_base + rows[:, None] * stride_os + offs_d[None, :], out.to(O.dtype.element_ty), mask=q_ok)
    if RAW_MAX:
        m_i = m_i * scale_log2
    lse = tl.where(empty, float("-inf"), (m_i + tl.math.log2(tl.where(empty, 1.0, l_i))) * 0.6931471805599453)
    lse_ptrs = head_ptr(LSE, b64, h, stride_lb, stride_lh) + q_start + offs_m
    tl.store(lse_ptrs, lse, mask=offs_m < seqlen_q)


@triton.jit
def dropout_mask_kernel(KEEP, RNG, seqlen_q, seqlen_k, rng_row, dropout_p,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Writes the keep mask the attention kernels use, for tests and return_attn_probs."""
    pid_m = tl.program_id(0)
    h = tl.program_id(1)
    b = tl.program_id(2)
    _, seed = head_constants(RNG, RNG, b, h, tl.num_programs(1), 0, False, True)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    base = KEEP + ((b * tl.num_programs(1) + h).to(tl.int64) * seqlen_q) * seqlen_k
    for n0 in range(0, seqlen_k, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        keep = dropout_keep(seed, offs_m[:, None], offs_n[None, :], rng_row, dropout_p)
        ok = (offs_m[:, None] < seqlen_q) & (offs_n[None, :] < seqlen_k)
        tl.store(base + wide(offs_m)[:, None] * seqlen_k + offs_n[None, :], keep.to(tl.int8), mask=ok)
