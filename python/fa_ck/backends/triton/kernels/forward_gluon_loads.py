"""The Gluon forward's work and its loads (forward_gluon.py): which tiles a program takes, the same
in every partition (unit_tile, unit_count: persistent programs take pairs of query blocks, heaviest with
lightest), and the producer warp that loads each tile's Q once and streams K and V through the
rings by TMA (producer, _copy_q). The consumers' side, the softmax and the multiplies, is
forward_gluon.py's."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from .gluon_common import copy_tile, gl_key_blocks, head_desc, gl_sequence, stream_kv


@gluon.jit
def unit_tile(u, second, CU_Q, CU_K, seqlen_q, seqlen_k, num_heads, window_left, window_right,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, VARLEN: gl.constexpr, MASK_LEFT: gl.constexpr,
              MASK_RIGHT: gl.constexpr):
    """Tile `second` (0 or 1) of work unit u, the same in every partition: (b, h, m0, q_start,
    k_start, seqlen_q, seqlen_k, lo, full_lo, full_hi, n_blocks, active). A unit is a pair of a
    head's query blocks, the k-th heaviest and the k-th lightest (last blocks first: under a causal
    mask they carry the most keys), so every unit of a causal call weighs the same and programs
    that take units in turn finish together. active: the tile holds queries."""
    n_m, per_head = _blocks_and_units(seqlen_q, BLOCK_M)
    bh = u // per_head
    k = u % per_head
    pid_m = n_m - 1 - k
    active = second == 0
    if second == 1:
        pid_m = k
        active = k < n_m - 1 - k
    h = bh % num_heads
    b = bh // num_heads
    m0 = pid_m * BLOCK_M
    q_start, k_start, seqlen_q, seqlen_k = gl_sequence(CU_Q, CU_K, b, seqlen_q, seqlen_k, VARLEN)
    active = active & (m0 < seqlen_q)
    lo, full_lo, full_hi, hi = gl_key_blocks(m0, seqlen_q, seqlen_k, window_left, window_right, BLOCK_M,
                                           BLOCK_N, MASK_LEFT, MASK_RIGHT)
    n_blocks = gl.cdiv(gl.maximum(hi - lo, 0), BLOCK_N)
    if not active:
        n_blocks = 0
    return b, h, m0, q_start, k_start, seqlen_q, seqlen_k, lo, full_lo, full_hi, n_blocks, active


@gluon.jit
def _blocks_and_units(seqlen_q, BLOCK_M: gl.constexpr):
    """(query blocks, work units) per head (seqlen_q: the longest sequence; see unit_tile)."""
    n_m = gl.cdiv(seqlen_q, BLOCK_M)
    return n_m, (n_m + 1) // 2


@gluon.jit
def unit_count(seqlen_q, batch, num_heads, BLOCK_M: gl.constexpr):
    """How many work units the call has (see unit_tile)."""
    n_m, per_head = _blocks_and_units(seqlen_q, BLOCK_M)
    return batch * num_heads * per_head


@gluon.jit
def _copy_q(desc, m0, q_full, q_empty, n_q, q_smem, part, b, h, FOUR_D: gl.constexpr):
    """Q's n_q-th tile from row m0 into q_smem once its consumers are done with the last one
    (q_empty): one TMA box (part 0), or for 192 queries (three consumer warpgroups; a box's rows
    and a buffer's shape are powers of two) the 64-row box `part` into q_smem's (64, BLOCK_D) tile
    `part`, with that warpgroup's own barriers (see producer)."""
    mbarrier.wait(q_empty.index(part), (n_q - 1) & 1, pred=n_q > 0)
    if len(q_smem.shape) == 3:
        copy_tile(desc, m0 + part * 64, 0, q_full.index(part), q_smem.index(part), b, h, FOUR_D)
    else:
        copy_tile(desc, m0, 0, q_full.index(0), q_smem, b, h, FOUR_D)


@gluon.constexpr_function
def _byte_rows_layout(cols):
    """A one-warp layout over (8, cols) bytes, 16 consecutive bytes per thread (cols 64 or 128)."""
    per_row = max(cols // 16, 1)
    return gl.BlockedLayout([1, 16], [32 // per_row, per_row], [1, 1], [1, 0])


@gluon.jit
def _negate_rows(q_smem):
    """q_smem's fp8 values negated in place by this warp, eight rows at a time (its few registers),
    each value's sign bit flipped (exact; NaN stays NaN); then fenced for wgmma's async reads."""
    ROWS: gl.constexpr = q_smem.shape[0]
    layout: gl.constexpr = _byte_rows_layout(q_smem.shape[1])
    for r in gl.static_range(0, ROWS, 8):
        rows = q_smem.slice(r, 8)
        x = rows.load(layout).to(gl.uint8, bitcast=True) ^ 0x80
        rows.store(x.to(gl.uint8).to(q_smem.dtype, bitcast=True))
    fence_async_shared()


@gluon.jit
def _negative(QD, KD, stride_qdb, stride_kdb, b, h, group):
    """Whether (batch b, head h)'s q and k descales multiply to a negative number (the consumers'
    scale then too: its other factor is positive under RAW_MAX)."""
    b64 = b.to(gl.int64)
    return gl.load(QD + b64 * stride_qdb + h) * gl.load(KD + b64 * stride_kdb + (h // group).to(gl.int64)) < 0


@gluon.jit
def _copy_q_signed(desc, m0, q_full, q_landed, q_empty, n_q, n_neg, q_smem, negative, b, h,
                   FOUR_D: gl.constexpr):
    """_copy_q for a caller's fp8 q with RAW_MAX: where the tile's descales multiply to a negative
    scale (negative), the consumers take the scale's magnitude, so the rows must arrive negated.
    Then the TMA lands on q_landed, this warp flips the rows' signs and arrives on q_full; else Q
    lands on q_full as _copy_q's. Done here, not in the consumers: code beside their loop makes
    ptxas schedule the loop worse (docs/performance.md, Kernel choices). Returns the negated tiles
    counted (q_landed's phase)."""
    if negative:
        mbarrier.wait(q_empty.index(0), (n_q - 1) & 1, pred=n_q > 0)
        copy_tile(desc, m0, 0, q_landed, q_smem, b, h, FOUR_D)
        mbarrier.wait(q_landed, n_neg & 1)
        _negate_rows(q_smem)
        mbarrier.arrive(q_full.index(0), count=1)
        n_neg += 1
    else:
        _copy_q(desc, m0, q_full, q_empty, n_q, q_smem, 0, b, h, FOUR_D)
    return n_neg


@gluon.jit
def producer(loads, SMEM_Q: gl.constexpr, SMEM_KV: gl.constexpr, SMEM_V: gl.constexpr, VARLEN: gl.constexpr,
             MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr, FP8: gl.constexpr, HOST_DESC: gl.constexpr,
             BLOCK_M: gl.constexpr, DIAG_FIRST: gl.constexpr, NEG_Q: gl.constexpr):
    """One warp: per tile, Q once its consumers have done their last QK^T of the tile before
    (Q16_EARLY: once both have rounded its Q; 192 queries: per warpgroup, the third's after the
    tile's first blocks), then K_j and V_j
    through the rings, so that it loads the next tile's first blocks under this one's tail. HOST_DESC: Q, K, V are host-made descriptors over (batch,
    heads, rows, head_dim) (fp8 V: (batch, heads, head_dim, keys)); else pointers, and each
    tile's descriptors are built here on the device (varlen: its bounds come free). BLOCK_M: queries per tile (192:
    q_smem holds (64, BLOCK_D) tiles, see _copy_q). NEG_Q: a caller's fp8 q under RAW_MAX, its rows
    negated here where the tile's descales multiply to a negative number (_copy_q_signed). loads:
    fwd_gluon_kernel's run-time arguments for this partition, as one tuple."""
    Q, K, V, CU_Q, CU_K, stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh, stride_vb, stride_vs, \
        stride_vh, stride_vd, seqlen_q, seqlen_k, batch, num_heads, group, head_dim, window_left, window_right, \
        q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, QD, KD, stride_qdb, stride_kdb, \
        q_landed = loads
    BLOCK_D: gl.constexpr = q_smem.shape[-1]
    BLOCK_N: gl.constexpr = k_smem.shape[1]
    NUM_BUF: gl.constexpr = k_smem.shape[0]
    n_q = 0                                    # Q tiles loaded
    n_neg = 0                                  # of them negated (NEG_Q)
    it = 0                                     # K/V blocks streamed
    for u in range(gl.program_id(0), unit_count(seqlen_q, batch, num_heads, BLOCK_M), gl.num_programs(0)):
        for second in range(2):
            b, h, m0, q_start, k_start, sq, sk, lo, full_lo, full_hi, n_blocks, active = unit_tile(
                u, second, CU_Q, CU_K, seqlen_q, seqlen_k, num_heads, window_left, window_right, BLOCK_M, BLOCK_N,
                VARLEN, MASK_LEFT, MASK_RIGHT)
            if n_blocks > 0:
                if HOST_DESC and len(q_smem.shape) == 3:
                    # Three warpgroups, each with its own Q barriers: the third's Q waits until the
                    # ring holds the first blocks of this tile, which the first two may start on while
                    # it finishes the last tile (the ring's later blocks need it, so its Q comes
                    # before them)
                    _copy_q(Q, m0, q_full, q_empty, n_q, q_smem, 0, b, h, True)
                    _copy_q(Q, m0, q_full, q_empty, n_q, q_smem, 1, b, h, True)
                    first = gl.minimum(n_blocks, NUM_BUF)
                    stream_kv(K, V, k_smem, v_smem, k_full, v_full, k_empty, v_empty, lo, first, FP8, it, b,
                               h // group, True)
                    _copy_q(Q, m0, q_full, q_empty, n_q, q_smem, 2, b, h, True)
                    stream_kv(K, V, k_smem, v_smem, k_full, v_full, k_empty, v_empty, lo + first * BLOCK_N,
                               n_blocks - first, FP8, it + first, b, h // group, True)
                elif HOST_DESC:
                    if NEG_Q:
                        n_neg = _copy_q_signed(Q, m0, q_full, q_landed, q_empty, n_q, n_neg, q_smem,
                                               _negative(QD, KD, stride_qdb, stride_kdb, b, h, group), b, h, True)
                    else:
                        _copy_q(Q, m0, q_full, q_empty, n_q, q_smem, 0, b, h, True)
                    stream_kv(K, V, k_smem, v_smem, k_full, v_full, k_empty, v_empty, lo, n_blocks, FP8, it, b,
                               h // group, True, DIAG_FIRST)
                else:
                    if n_q > 0:
                        # The descriptors are rewritten in place: first the last tile's Q consumed and its
                        # last K and V landed (the TMA unit reads a descriptor while it copies).
                        for i in gl.static_range(3 if len(q_smem.shape) == 3 else 1):
                            mbarrier.wait(q_empty.index(i), (n_q - 1) & 1)
                        last = (it - 1) % NUM_BUF
                        mbarrier.wait(k_full.index(last), ((it - 1) // NUM_BUF) & 1)
                        mbarrier.wait(v_full.index(last), ((it - 1) // NUM_BUF) & 1)
                    b64 = b.to(gl.int64)
                    hk = (h // group).to(gl.int64)
                    q_desc = head_desc(Q + b64 * stride_qb + h.to(gl.int64) * stride_qh, q_start, stride_qs, sq, head_dim,
                                   q_smem.shape[-2], BLOCK_D, SMEM_Q)
                    k_desc = head_desc(K + b64 * stride_kb + hk * stride_kh, k_start, stride_ks, sk, head_dim, BLOCK_N,
                                   BLOCK_D, SMEM_KV)
                    v_head = V + b64 * stride_vb + hk * stride_vh
                    if FP8:        # (head_dim, keys) tiles of the keys-contiguous v
                        v_keys = gl.cdiv(sk, 16) * 16     # keys reordered in groups of 16, the last zero-padded
                        v_desc = tma.make_tensor_descriptor(v_head + k_start, [head_dim, v_keys], [stride_vd, 1],
                                                            [BLOCK_D, BLOCK_N], SMEM_V)
                    else:
                        v_desc = head_desc(v_head, k_start, stride_vs, sk, head_dim, BLOCK_N, BLOCK_D, SMEM_V)
                    if NEG_Q:
                        n_neg = _copy_q_signed(q_desc, m0, q_full, q_landed, q_empty, n_q, n_neg, q_smem,
                                               _negative(QD, KD, stride_qdb, stride_kdb, b, h, group), b, h, False)
                    else:
                        for part in gl.static_range(3 if len(q_smem.shape) == 3 else 1):
                            _copy_q(q_desc, m0, q_full, q_empty, n_q, q_smem, part, b, h, False)
                    stream_kv(k_desc, v_desc, k_smem, v_smem, k_full, v_full, k_empty, v_empty, lo, n_blocks, FP8, it,
                               DIAG_FIRST=DIAG_FIRST)
                n_q += 1
                it += n_blocks
