"""Pieces shared by the forward and backward kernels: one definition of a score.

Scores are kept in log2 units (scale * log2(e) folded in) so softmax uses exp2 (the forward's
softmax_step with RAW_MAX takes raw scores and scales them inside the exponential). Every
feature is a constexpr switch, so a kernel compiled without it carries no trace of it.
`i` and `j` are broadcastable index tensors of query and key positions (the backward
works on transposed tiles, so orientation is the caller's).
"""
import triton
import triton.language as tl

LOG2E: tl.constexpr = 1.4426950408889634


@triton.jit
def tanh(x):
    # Portable (CUDA, HIP, interpreter): 1 - 2 / (exp(2x) + 1); saturates cleanly at +-1.
    return 1.0 - 2.0 / (tl.exp2(x * (2.0 * 1.4426950408889634)) + 1.0)


@triton.jit
def scores(qk, i, j, seqlen_q, seqlen_k, scale_log2, softcap_in, softcap_out, slope_log2,
           window_left, window_right, SOFTCAP: tl.constexpr, ALIBI: tl.constexpr,
           MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr, MASKED: tl.constexpr):
    """Raw q.k -> (log2-unit scores with -inf where not visible, tanh term for softcap's gradient)."""
    if SOFTCAP:
        t = tanh(qk * softcap_in)             # softcap_in = scale / softcap
        s = t * softcap_out                   # softcap_out = softcap * log2(e)
    else:
        t = qk
        s = qk * scale_log2
    diag = i + (seqlen_k - seqlen_q)          # the key aligned with query i (bottom-right)
    if ALIBI:
        s = s - slope_log2 * tl.abs(diag - j).to(tl.float32)
    if MASKED:
        # The right edge and the sequence's end fold into one bound per query (a vector of the
        # tile's rows or columns): one compare and one select per score, not two of each
        if MASK_RIGHT:
            ok = j <= tl.minimum(diag + window_right, seqlen_k - 1)
        else:
            ok = j < seqlen_k
        if MASK_LEFT:
            ok = ok & (j >= diag - window_left)
        s = tl.where(ok, s, float("-inf"))
    return s, t


@triton.jit
def softmax_step(s, m_i, scale_log2, RAW_MAX: tl.constexpr, MASKED: tl.constexpr, P_LOG2: tl.constexpr = 0.0):
    """One online-softmax step over scores s: (p, alpha, new row max). RAW_MAX: s and m_i are raw
    scores q.k (scale_log2 a positive normal float32, no softcap or ALiBi: CallSpec.raw_max),
    each scaled inside its exponential's argument, one FFMA rather than an FMUL of its own, as
    the forward's loop is issue-bound (docs/performance.md, Kernel choices). Else s and m_i are
    in log2 units already. MASKED: a row may have seen no visible key yet (max -inf): subtract 0.
    P_LOG2: p comes out times 2^P_LOG2 (the Gluon forward's fp8 P scale, folded into the
    exponent: no multiply per element)."""
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = m_new
    if MASKED:
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    if RAW_MAX:
        m_scaled = m_safe * scale_log2
        p = tl.math.exp2(s * scale_log2 - (m_scaled - P_LOG2)[:, None])
        alpha = tl.math.exp2(m_i * scale_log2 - m_scaled)
    else:
        p = tl.math.exp2(s - (m_safe - P_LOG2)[:, None])
        alpha = tl.math.exp2(m_i - m_safe)
    return p, alpha, m_new


@triton.jit
def load_tile(base, offs, rows_ok, d_ok, MASKED: tl.constexpr, EVEN_D: tl.constexpr):
    """The tile at base + offs. rows_ok (keys or queries in range) is checked only in blocks that
    straddle a mask edge, d_ok only when the head dim is padded; both come oriented like the tile."""
    if MASKED:
        tile = tl.load(base + offs, mask=rows_ok & d_ok, other=0.0)
    elif EVEN_D:
        tile = tl.load(base + offs)
    else:
        tile = tl.load(base + offs, mask=d_ok, other=0.0)
    return tile


@triton.jit
def tma_rows(base, rows, head_dim, stride_row, BLOCK_ROWS: tl.constexpr, BLOCK_D: tl.constexpr):
    """A TMA descriptor for (BLOCK_ROWS, BLOCK_D) tiles of one head's (rows, head_dim) matrix at
    base. Hopper's tensor memory accelerator copies whole tiles into shared memory: no
    per-thread addresses or masks; rows past `rows` and columns past head_dim arrive as zeros.
    (Callers keep the pointer where TMA is off: one helper cannot return either type.)"""
    return tl.make_tensor_descriptor(base, shape=[rows, head_dim], strides=[stride_row, 1],
                                     block_shape=[BLOCK_ROWS, BLOCK_D])


@triton.jit
def dropout_keep(seed, i, j, row_stride, dropout_p):
    """The keep mask, regenerated bit for bit wherever the same (seed, i, j) is asked for."""
    return tl.rand(seed, wide(i) * row_stride + j) >= dropout_p     # int64 counters: no wrap


@triton.jit
def key_blocks(m0, seqlen_q, seqlen_k, window_left, window_right,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr):
    """For queries [m0, m0 + BLOCK_M): keys [lo, hi) may be visible; [full_lo, full_hi) are
    whole blocks visible to every query (no mask needed). lo <= full_lo <= full_hi <= hi."""
    off = seqlen_k - seqlen_q
    lo = 0
    hi = seqlen_k
    full_lo = 0
    full_hi = seqlen_k // BLOCK_N * BLOCK_N
    if MASK_LEFT:
        lo = tl.maximum(m0 + off - window_left, 0) // BLOCK_N * BLOCK_N
        full_lo = tl.cdiv(tl.maximum(m0 + BLOCK_M - 1 + off - window_left, 0), BLOCK_N) * BLOCK_N
    if MASK_RIGHT:
        hi = tl.minimum(tl.maximum(m0 + BLOCK_M + off + window_right, 0), seqlen_k)
        full_hi = tl.minimum(full_hi, tl.maximum(m0 + off + window_right + 1, 0) // BLOCK_N * BLOCK_N)
    hi = tl.maximum(hi, lo)
    full_lo = tl.minimum(tl.maximum(full_lo, lo), hi)
    full_hi = tl.minimum(tl.maximum(full_hi, full_lo), hi)
    return lo, full_lo, full_hi, hi


@triton.jit
def warpgroup_blocks(m0, lo, n_blocks, seqlen_q, seqlen_k, window_left, window_right,
                     ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
                     MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr):
    """For ROWS queries from m0 that share a tile's n_blocks key blocks from lo: the whole blocks
    [full_lo, full_hi) for these rows alone, and n_mine, how many of the tile's blocks they read
    (the rest hold no key they can see). Rows that see no key read the tile's blocks."""
    _, full_lo, full_hi, hi = key_blocks(m0, seqlen_q, seqlen_k, window_left, window_right, ROWS, BLOCK_N,
                                         MASK_LEFT, MASK_RIGHT)
    n_mine = tl.minimum(tl.cdiv(tl.maximum(hi - lo, 0), BLOCK_N), n_blocks)
    n_mine = tl.where(n_mine == 0, n_blocks, n_mine)
    return full_lo, full_hi, n_mine


@triton.jit
def query_blocks(n0, seqlen_q, seqlen_k, window_left, window_right,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr):
    """For keys [n0, n0 + BLOCK_N): queries [lo, hi) may see them; [full_lo, full_hi) are whole
    blocks of queries that see every key of the block (and lie inside seqlen_q). Padded keys
    past seqlen_k need no mask here: their dk/dv rows are never stored."""
    off = seqlen_k - seqlen_q
    lo = 0
    hi = seqlen_q
    full_lo = 0
    full_hi = seqlen_q // BLOCK_M * BLOCK_M
    if MASK_RIGHT:
        lo = tl.maximum(n0 - off - window_right, 0) // BLOCK_M * BLOCK_M
        full_lo = tl.cdiv(tl.maximum(n0 + BLOCK_N - 1 - off - window_right, 0), BLOCK_M) * BLOCK_M
    if MASK_LEFT:
        hi = tl.minimum(tl.maximum(n0 + BLOCK_N - off + window_left, 0), seqlen_q)
        full_hi = tl.minimum(full_hi, tl.maximum(n0 - off + window_left + 1, 0) // BLOCK_M * BLOCK_M)
    hi = tl.maximum(hi, lo)
    full_lo = tl.minimum(tl.maximum(full_lo, lo), hi)
    full_hi = tl.minimum(tl.maximum(full_hi, full_lo), hi)
    return lo, full_lo, full_hi, hi


@triton.jit
def fp8_round(x, EMIN: tl.constexpr):
    """fp32 x (|x| within the format's range) rounded to the nearest e4m3 value, ties to even,
    returned as fp32: exactly what the GPU's fp32 -> fp8 conversion gives. EMIN is the format's
    smallest normal exponent (-6 for e4m3fn, -7 for e4m3fnuz); below it the grid is subnormal.
    The interpreter's own fp32 -> fp8 cast drops carries and truncates subnormals, so its fp8
    path rounds with this instead: adding C = 1.5 * 2^(e + 20), whose fp32 ulp is the fp8
    quantum 2^(e - 3) at x's exponent e, makes the fp32 adder round x to that grid."""
    e = ((x.to(tl.int32, bitcast=True) >> 23) & 0xFF) - 127
    e = tl.maximum(e, EMIN)
    c = (((e + 147) << 23) | (1 << 22)).to(tl.float32, bitcast=True)
    return (x + c) - c


@triton.jit
def wide(x):
    """x as int64, for tensors and specialised constants alike: row offsets times strides pass
    2^31 in tensors of more than 2^31 elements."""
    return x + tl.zeros([], tl.int64)


@triton.jit
def sequence(CU_Q, CU_K, b, seqlen_q, seqlen_k, VARLEN: tl.constexpr):
    """(first q row, first k row, seqlen_q, seqlen_k) of batch entry b; rows are int64."""
    if VARLEN:
        q_start = tl.load(CU_Q + b).to(tl.int64)
        k_start = tl.load(CU_K + b).to(tl.int64)
        seqlen_q = (tl.load(CU_Q + b + 1) - q_start).to(tl.int32)
        seqlen_k = (tl.load(CU_K + b + 1) - k_start).to(tl.int32)
    else:
        q_start = wide(0)
        k_start = wide(0)
    return q_start, k_start, seqlen_q, seqlen_k


@triton.jit
def query_block(CU_Q, CU_K, seqlen_q, seqlen_k, BLOCK_M: tl.constexpr, VARLEN: tl.constexpr):
    """Where a program of a (query block, head, batch) grid works: (first query m0, head h, batch
    entry b, num_heads, then sequence()'s q_start, k_start, seqlen_q, seqlen_k)."""
    # Last query blocks first: under a causal mask they carry the most keys, so the long
    # programs start early and the short ones fill the tail of the grid.
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    h = tl.program_id(1)
    b = tl.program_id(2)
    num_heads = tl.num_programs(1)
    q_start, k_start, seqlen_q, seqlen_k = sequence(CU_Q, CU_K, b, seqlen_q, seqlen_k, VARLEN)
    return pid_m * BLOCK_M, h, b, num_heads, q_start, k_start, seqlen_q, seqlen_k


@triton.jit
def head_ptr(X, b, h, stride_b, stride_h):
    """Start of head h of batch entry b in X, in int64: large tensors pass 2^31 elements."""
    return X + b.to(tl.int64) * stride_b + h.to(tl.int64) * stride_h


@triton.jit
def head_constants(SLOPES, RNG, b, h, num_heads, stride_sb, ALIBI: tl.constexpr, DROPOUT: tl.constexpr):
    """(ALiBi slope of head h in log2 units, dropout seed of (b, h)); 0 when the feature is off."""
    slope_log2 = tl.zeros([], tl.float32)
    if ALIBI:
        slope_log2 = tl.load(SLOPES + b * stride_sb + h) * 1.4426950408889634
    seed = tl.zeros([], tl.int64)
    if DROPOUT:
        seed = tl.load(RNG) + tl.load(RNG + 1) + (b * num_heads + h)
    return slope_log2, seed
