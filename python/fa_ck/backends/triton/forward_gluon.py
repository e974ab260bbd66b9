"""FlashAttention forward for Hopper (sm90) in Gluon: warp-specialised, and the softmax of key
block j runs while the tensor cores multiply P_{j-1} V_{j-1}.

Plain Triton compiles our forward (forward.py) to QK^T wgmma | wait | softmax | PV wgmma | wait:
nothing overlaps the softmax, and no source-level reordering changed that. Gluon states the
schedule itself (FlashAttention-3's intra-warpgroup overlap), per key block j:

    issue S_j = Q K_j^T (async) | issue O += P_{j-1} V_{j-1} (async) | wait for S_j only
    softmax(S_j) -> P_j, alpha_j    (while the PV multiply runs)
    wait for the PV multiply | O *= alpha_j

One program owns 128 queries of one head: two consumer warpgroups of 64 rows each (their own
partitions, so neither waits on the other) and one producer warp that streams K and V through
NUM_BUF-deep rings of shared memory by TMA. "full" barriers tell the consumers a tile has
landed; "empty" barriers (both consumers arrive) tell the producer the multiply that read a
buffer has completed. A first version issued the TMA loads from the consumers: the CTA-wide
barrier before each load was its largest stall (bench/results/h200-20261130-gluon, call 3).
P stays in registers as wgmma's A operand.

Serves the plain calls (fp16/bf16, head dim up to 128, causal and sliding windows, varlen,
GQA); softcap, ALiBi and dropout stay with forward.py. Writes the same out and lse.

FP8 (e4m3fn, on request: FA_CK_TRITON_CONFIG fwd GLUON with fp8=True): the scheme of forward.py
(per-(batch, head) descales folded into the score scale, P multiplied by P_SCALE and rounded to
fp8, out divided by it and multiplied by v's descale). fp8 wgmma reads both operands K-major,
so v arrives keys-contiguous and streams as (head_dim, keys) tiles (V_KEYS_MAJOR).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                               warpgroup_mma_wait)

from .common import key_blocks, scores

# The key-block bounds and the score mask are forward.py's, compiled again as Gluon.
_key_blocks = gluon.jit(key_blocks.fn)
_scores = gluon.jit(scores.fn)


@gluon.jit
def _sequence(CU_Q, CU_K, b, seqlen_q, seqlen_k, VARLEN: gl.constexpr):
    """common.sequence in Gluon: (first q row, first k row, seqlen_q, seqlen_k) of batch entry b."""
    q_start = b.to(gl.int64) * 0
    k_start = q_start
    if VARLEN:
        q_start = gl.load(CU_Q + b).to(gl.int64)
        k_start = gl.load(CU_K + b).to(gl.int64)
        seqlen_q = (gl.load(CU_Q + b + 1) - q_start).to(gl.int32)
        seqlen_k = (gl.load(CU_K + b + 1) - k_start).to(gl.int32)
    return q_start, k_start, seqlen_q, seqlen_k


@gluon.jit
def _rows(head, start, stride_row, rows, head_dim, BLOCK_ROWS: gl.constexpr, BLOCK_D: gl.constexpr,
          LAYOUT: gl.constexpr):
    """A TMA descriptor for (BLOCK_ROWS, BLOCK_D) tiles of one head's (rows, head_dim) matrix from
    row `start` of `head`: rows past the sequence and columns past head_dim load as zeros and
    are never stored. Built per (sequence, head), so varlen bounds come free."""
    return tma.make_tensor_descriptor(head + start * stride_row, [rows, head_dim], [stride_row, 1],
                                      [BLOCK_ROWS, BLOCK_D], LAYOUT)


@gluon.jit
def _softmax(qk, m_i, l_i, offs_m, offs_n, seqlen_q, seqlen_k, scale_log2, window_left, window_right,
             MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr, MASKED: gl.constexpr):
    """One online-softmax step: (p, alpha, new row max, new row sum)."""
    s, _ = _scores(qk, offs_m[:, None], offs_n[None, :], seqlen_q, seqlen_k, scale_log2, 0.0, 0.0, 0.0,
                   window_left, window_right, False, False, MASK_LEFT, MASK_RIGHT, MASKED)
    m_new = gl.maximum(m_i, gl.max(s, 1))
    m_safe = m_new
    if MASKED:   # a row that has seen no visible key yet keeps max -inf: subtract 0 instead
        m_safe = gl.where(m_new == float("-inf"), 0.0, m_new)
    p = gl.exp2(s - m_safe[:, None])
    alpha = gl.exp2(m_i - m_safe)
    return p, alpha, m_new, l_i * alpha + gl.sum(p, 1)


@gluon.jit
def _step(qk, m_i, l_i, n0, full_lo, full_hi, offs_m, offs_n0, seqlen_q, seqlen_k, scale_log2,
          window_left, window_right, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr):
    """_softmax, with the mask only in blocks that straddle a mask edge or the sequence end."""
    offs_n = n0 + offs_n0
    if (n0 < full_lo) | (n0 >= full_hi):
        p, alpha, m_i, l_i = _softmax(qk, m_i, l_i, offs_m, offs_n, seqlen_q, seqlen_k, scale_log2,
                                      window_left, window_right, MASK_LEFT, MASK_RIGHT, True)
    else:
        p, alpha, m_i, l_i = _softmax(qk, m_i, l_i, offs_m, offs_n, seqlen_q, seqlen_k, scale_log2,
                                      window_left, window_right, MASK_LEFT, MASK_RIGHT, False)
    return p, alpha, m_i, l_i


@gluon.jit
def _load(desc, row, bar, dst, nbytes: gl.constexpr, pred):
    mbarrier.expect(bar, nbytes, pred=pred)
    tma.async_copy_global_to_shared(desc, [row, 0], bar, dst, pred=pred)


@gluon.jit
def _take_turn(my_turn, phase, PINGPONG: gl.constexpr):
    if PINGPONG:
        mbarrier.wait(my_turn, phase)


@gluon.jit
def _pass_turn(other_turn, PINGPONG: gl.constexpr):
    if PINGPONG:
        mbarrier.arrive(other_turn, count=1)


@gluon.jit
def _ring_barriers(NUM_BUF: gl.constexpr):
    """The K and V rings' mbarriers, initialised: (k_full, v_full, k_empty, v_empty). A full
    barrier completes on its tile's TMA bytes, an empty one on both consumer warpgroups' arrivals."""
    k_full = gl.allocate_shared_memory(gl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    v_full = gl.allocate_shared_memory(gl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_BUF):
        mbarrier.init(k_full.index(i), count=1)
        mbarrier.init(v_full.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)
        mbarrier.init(v_empty.index(i), count=2)
    return k_full, v_full, k_empty, v_empty


@gluon.jit
def _invalidate_rings(k_full, v_full, k_empty, v_empty):
    NUM_BUF: gl.constexpr = k_full.shape[0]
    for i in gl.static_range(NUM_BUF):
        mbarrier.invalidate(k_full.index(i))
        mbarrier.invalidate(v_full.index(i))
        mbarrier.invalidate(k_empty.index(i))
        mbarrier.invalidate(v_empty.index(i))


@gluon.jit
def _producer(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, k_full, v_full, k_empty, v_empty,
              m0, lo, n_blocks, V_KEYS_MAJOR: gl.constexpr):
    """One warp: Q once, then K_j and V_j into buffer j % NUM_BUF once the consumers freed it."""
    _load(q_desc, m0, q_bar, q_smem, q_desc.block_type.nbytes, True)
    _stream_kv(k_desc, v_desc, k_smem, v_smem, k_full, v_full, k_empty, v_empty, lo, n_blocks, V_KEYS_MAJOR)


@gluon.jit
def _stream_kv(k_desc, v_desc, k_smem, v_smem, k_full, v_full, k_empty, v_empty, lo, n_blocks,
               V_KEYS_MAJOR: gl.constexpr = False):
    """K_j and V_j from key lo + j * BLOCK_N into buffer j % NUM_BUF of their rings, each once
    both consumers released the buffer's previous tile (its empty barrier). V_KEYS_MAJOR: v's
    descriptor is over (head_dim, keys) (fp8's keys-contiguous v)."""
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    NUM_BUF: gl.constexpr = k_smem.shape[0]
    for j in range(n_blocks):
        buf = j % NUM_BUF
        reuse = j >= NUM_BUF                 # buffer's previous tile: block j - NUM_BUF
        phase = ((j // NUM_BUF) & 1) ^ 1
        mbarrier.wait(k_empty.index(buf), phase, pred=reuse)
        _load(k_desc, lo + j * BLOCK_N, k_full.index(buf), k_smem.index(buf), k_desc.block_type.nbytes, True)
        mbarrier.wait(v_empty.index(buf), phase, pred=reuse)
        if V_KEYS_MAJOR:
            mbarrier.expect(v_full.index(buf), v_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(v_desc, [0, lo + j * BLOCK_N], v_full.index(buf), v_smem.index(buf))
        else:
            _load(v_desc, lo + j * BLOCK_N, v_full.index(buf), v_smem.index(buf), v_desc.block_type.nbytes, True)


@gluon.jit
def _pv(p, v_tile, acc, V_KEYS_MAJOR: gl.constexpr):
    """Issue acc += P V (async); a keys-major v tile (fp8) is read through its transpose."""
    if V_KEYS_MAJOR:
        acc = warpgroup_mma(p, v_tile.permute((1, 0)), acc, is_async=True)
    else:
        acc = warpgroup_mma(p, v_tile, acc, is_async=True)
    return acc


@gluon.jit
def _p_operand(p, p_smem, P_SCALE: gl.constexpr, dtype: gl.constexpr, layout: gl.constexpr):
    """P as the PV multiply's A operand: in registers, or for fp8 (whose register operands the
    wgmma wait cannot track) scaled from [0, 1] to [0, P_SCALE] and stored to p_smem. Called
    once the previous PV multiply has completed, so the buffer is free."""
    if dtype.primitive_bitwidth == 8:
        p_smem.store((p * P_SCALE).to(dtype))
        fence_async_shared()                  # the generic-proxy store before wgmma's async read
        operand = p_smem
    else:
        operand = gl.convert_layout(p.to(dtype), layout)
    return operand


@gluon.jit
def _pv_wait(acc, p, dtype: gl.constexpr):
    """Wait for every multiply issued; P in registers is kept alive until its multiply is done."""
    if dtype.primitive_bitwidth == 8:         # P in shared memory (see _p_operand)
        acc = warpgroup_mma_wait(0, deps=[acc])
    else:
        acc, p = warpgroup_mma_wait(0, deps=[acc, p])
    return acc, p


@gluon.jit
def _consumer(q_smem, k_smem, v_smem, p_smem, q_bar, k_full, v_full, k_empty, v_empty, my_turn, other_turn,
              o_base, lse_base, stride_os, m0, lo, full_lo, full_hi, n_blocks, seqlen_q, seqlen_k, head_dim,
              scale_log2, out_scale, window_left, window_right, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr,
              PINGPONG: gl.constexpr, FIRST: gl.constexpr, P_SCALE: gl.constexpr, V_KEYS_MAJOR: gl.constexpr):
    """One warpgroup: queries [m0, m0 + 64) against the key blocks, then their out and lse.
    PINGPONG: the two warpgroups take turns to issue their multiplies (my_turn / other_turn
    barriers), so one's softmax runs under the other's multiplies (FlashAttention-3's ping-pong);
    FIRST starts. out_scale multiplies the output (fp8: v's descale / P_SCALE; else 1); p_smem
    holds this warpgroup's P for fp8 (unused otherwise)."""
    ROWS: gl.constexpr = q_smem.shape[0]
    BLOCK_D: gl.constexpr = q_smem.shape[1]
    BLOCK_N: gl.constexpr = k_smem.shape[1]
    NUM_BUF: gl.constexpr = k_smem.shape[0]
    dtype: gl.constexpr = q_smem.dtype
    out_dtype: gl.constexpr = o_base.dtype.element_ty
    # wgmma's K per instruction: 32 bytes (16 halves, 32 fp8 values)
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 256 // dtype.primitive_bitwidth])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_D, 256 // dtype.primitive_bitwidth])
    # A operand in registers: 32 bits of K per thread (two 16-bit or four fp8 values)
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout,
                                                 k_width=32 // dtype.primitive_bitwidth)
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    row_o: gl.constexpr = gl.SliceLayout(1, o_layout)

    offs_m = m0 + gl.arange(0, ROWS, layout=row_s)
    offs_n0 = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    s_zero = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    acc = gl.zeros([ROWS, BLOCK_D], gl.float32, o_layout)
    m_i = gl.full([ROWS], float("-inf"), gl.float32, row_s)
    l_i = gl.zeros([ROWS], gl.float32, row_s)
    mbarrier.wait(q_bar, 0)
    if PINGPONG and not FIRST:
        mbarrier.arrive(other_turn, count=1)

    if n_blocks > 0:
        # Block 0: S_0 and its softmax; nothing to multiply with V yet.
        mbarrier.wait(k_full.index(0), 0)
        _take_turn(my_turn, 0, PINGPONG)
        qk = warpgroup_mma(q_smem, k_smem.index(0).permute((1, 0)), s_zero, use_acc=False, is_async=True)
        _pass_turn(other_turn, PINGPONG)
        qk = warpgroup_mma_wait(0, deps=[qk])
        mbarrier.arrive(k_empty.index(0), count=1)
        p, alpha, m_i, l_i = _step(qk, m_i, l_i, lo, full_lo, full_hi, offs_m, offs_n0, seqlen_q, seqlen_k,
                                   scale_log2, window_left, window_right, MASK_LEFT, MASK_RIGHT)
        p = _p_operand(p, p_smem, P_SCALE, dtype, p_layout)

        for j in range(1, n_blocks):
            buf = j % NUM_BUF
            prev = (j - 1) % NUM_BUF
            mbarrier.wait(k_full.index(buf), (j // NUM_BUF) & 1)
            mbarrier.wait(v_full.index(prev), ((j - 1) // NUM_BUF) & 1)
            _take_turn(my_turn, j & 1, PINGPONG)
            qk = warpgroup_mma(q_smem, k_smem.index(buf).permute((1, 0)), s_zero, use_acc=False, is_async=True)
            acc = _pv(p, v_smem.index(prev), acc, V_KEYS_MAJOR)
            _pass_turn(other_turn, PINGPONG)
            qk = warpgroup_mma_wait(1, deps=[qk])           # S_j done; the PV multiply may still run
            mbarrier.arrive(k_empty.index(buf), count=1)
            p_next, alpha, m_i, l_i = _step(qk, m_i, l_i, lo + j * BLOCK_N, full_lo, full_hi, offs_m, offs_n0,
                                            seqlen_q, seqlen_k, scale_log2, window_left, window_right,
                                            MASK_LEFT, MASK_RIGHT)
            acc, p = _pv_wait(acc, p, dtype)
            mbarrier.arrive(v_empty.index(prev), count=1)
            acc = acc * gl.convert_layout(alpha, row_o)[:, None]
            p = _p_operand(p_next, p_smem, P_SCALE, dtype, p_layout)

        last = (n_blocks - 1) % NUM_BUF
        mbarrier.wait(v_full.index(last), ((n_blocks - 1) // NUM_BUF) & 1)
        _take_turn(my_turn, n_blocks & 1, PINGPONG)
        acc = _pv(p, v_smem.index(last), acc, V_KEYS_MAJOR)
        _pass_turn(other_turn, PINGPONG)
        acc, p = _pv_wait(acc, p, dtype)

    empty = l_i == 0.0                       # the row saw no key: out 0, lse -inf
    inv_l = gl.where(empty, 0.0, out_scale / gl.where(empty, 1.0, l_i))
    out = acc * gl.convert_layout(inv_l, row_o)[:, None]
    # int64 base at this warpgroup's first row, 32-bit offsets within the tile (rows * stride
    # passes 2^31 in tensors of more than 2^31 elements)
    rows = gl.arange(0, ROWS, layout=row_o)
    cols = gl.arange(0, BLOCK_D, layout=gl.SliceLayout(0, o_layout))
    ok = (m0 + rows[:, None] < seqlen_q) & (cols[None, :] < head_dim)
    o_rows = o_base + m0.to(gl.int64) * stride_os
    gl.store(o_rows + rows[:, None] * stride_os + cols[None, :], out.to(out_dtype), mask=ok)
    lse = gl.where(empty, float("-inf"), (m_i + gl.log2(gl.where(empty, 1.0, l_i))) * 0.6931471805599453)
    gl.store(lse_base + offs_m, lse, mask=offs_m < seqlen_q)


@gluon.jit
def fwd_gluon_kernel(Q, K, V, O, LSE, CU_Q, CU_K, QD, KD, VD,
                     stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh,
                     stride_vb, stride_vs, stride_vh, stride_vd, stride_ob, stride_os, stride_oh,
                     stride_lb, stride_lh, stride_qdb, stride_kdb, seqlen_q, seqlen_k, group, head_dim, scale_log2,
                     window_left, window_right,
                     BLOCK_N: gl.constexpr, BLOCK_D: gl.constexpr, NUM_BUF: gl.constexpr, VARLEN: gl.constexpr,
                     MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr,
                     SMEM_Q: gl.constexpr, SMEM_KV: gl.constexpr, SMEM_V: gl.constexpr, SMEM_P: gl.constexpr,
                     PINGPONG: gl.constexpr, FP8: gl.constexpr, P_SCALE: gl.constexpr, num_warps: gl.constexpr):
    """num_warps = 4: the first consumer warpgroup; the second and the producer warp are workers.
    FP8: q, k, v in e4m3fn, v keys-contiguous (stride_vs 1, rows of stride_vd), descales QD
    (B, Hq), KD and VD (B, Hkv); SMEM_V is v's tile layout ((BLOCK_D, BLOCK_N) tiles for fp8),
    SMEM_P that of P's (64, BLOCK_N) staging tile (fp8 only)."""
    BLOCK_M: gl.constexpr = 128
    HALF: gl.constexpr = 64
    # Last query blocks first: under a causal mask they carry the most keys.
    pid_m = gl.num_programs(0) - 1 - gl.program_id(0)
    h = gl.program_id(1)
    b = gl.program_id(2)
    m0 = pid_m * BLOCK_M
    q_start, k_start, seqlen_q, seqlen_k = _sequence(CU_Q, CU_K, b, seqlen_q, seqlen_k, VARLEN)
    if m0 >= seqlen_q:
        return
    b64 = b.to(gl.int64)
    hk = (h // group).to(gl.int64)
    h64 = h.to(gl.int64)
    q_desc = _rows(Q + b64 * stride_qb + h64 * stride_qh, q_start, stride_qs, seqlen_q, head_dim, BLOCK_M, BLOCK_D,
                   SMEM_Q)
    k_desc = _rows(K + b64 * stride_kb + hk * stride_kh, k_start, stride_ks, seqlen_k, head_dim, BLOCK_N, BLOCK_D,
                   SMEM_KV)
    v_head = V + b64 * stride_vb + hk * stride_vh
    out_scale = 1.0
    if FP8:
        # (head_dim, keys) tiles of the keys-contiguous v; descales folded as in forward.py
        v_desc = tma.make_tensor_descriptor(v_head + k_start, [head_dim, seqlen_k], [stride_vd, 1], [BLOCK_D, BLOCK_N],
                                            SMEM_V)
        scale_log2 = scale_log2 * gl.load(QD + b64 * stride_qdb + h) * gl.load(KD + b64 * stride_kdb + hk)
        out_scale = gl.load(VD + b64 * stride_kdb + hk) / P_SCALE
    else:
        v_desc = _rows(v_head, k_start, stride_vs, seqlen_k, head_dim, BLOCK_N, BLOCK_D, SMEM_V)
    o_base = O + b64 * stride_ob + h64 * stride_oh + q_start * stride_os
    lse_base = LSE + b64 * stride_lb + h64 * stride_lh + q_start

    lo, full_lo, full_hi, hi = _key_blocks(m0, seqlen_q, seqlen_k, window_left, window_right, BLOCK_M, BLOCK_N,
                                           MASK_LEFT, MASK_RIGHT)
    n_blocks = gl.cdiv(gl.maximum(hi - lo, 0), BLOCK_N)

    dtype: gl.constexpr = Q.dtype.element_ty
    q_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, BLOCK_D], SMEM_Q)
    k_smem = gl.allocate_shared_memory(dtype, [NUM_BUF, BLOCK_N, BLOCK_D], SMEM_KV)
    if FP8:
        v_smem = gl.allocate_shared_memory(dtype, [NUM_BUF, BLOCK_D, BLOCK_N], SMEM_V)
        p_smem = gl.allocate_shared_memory(dtype, [2, HALF, BLOCK_N], SMEM_P)    # one P tile per warpgroup
        p_smem0 = p_smem.index(0)
        p_smem1 = p_smem.index(1)
    else:
        v_smem = gl.allocate_shared_memory(dtype, [NUM_BUF, BLOCK_N, BLOCK_D], SMEM_V)
        p_smem0 = q_smem                     # stand-ins: P stays in registers
        p_smem1 = q_smem
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_full, v_full, k_empty, v_empty = _ring_barriers(NUM_BUF)
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    mbarrier.init(turn.index(0), count=1)
    mbarrier.init(turn.index(1), count=1)

    gl.warp_specialize([
        (_consumer, (q_smem.slice(0, HALF), k_smem, v_smem, p_smem0, q_bar, k_full, v_full, k_empty, v_empty,
                     turn.index(0), turn.index(1), o_base, lse_base, stride_os, m0, lo, full_lo, full_hi, n_blocks,
                     seqlen_q, seqlen_k, head_dim, scale_log2, out_scale, window_left, window_right, MASK_LEFT,
                     MASK_RIGHT, PINGPONG, True, P_SCALE, FP8)),
        (_consumer, (q_smem.slice(HALF, HALF), k_smem, v_smem, p_smem1, q_bar, k_full, v_full, k_empty, v_empty,
                     turn.index(1), turn.index(0), o_base, lse_base, stride_os, m0 + HALF, lo, full_lo, full_hi,
                     n_blocks, seqlen_q, seqlen_k, head_dim, scale_log2, out_scale, window_left, window_right,
                     MASK_LEFT, MASK_RIGHT, PINGPONG, False, P_SCALE, FP8)),
        (_producer, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, k_full, v_full, k_empty, v_empty,
                     m0, lo, n_blocks, FP8)),
    ], [4, 1], [240, 24])

    mbarrier.invalidate(q_bar)
    mbarrier.invalidate(turn.index(0))
    mbarrier.invalidate(turn.index(1))
    _invalidate_rings(k_full, v_full, k_empty, v_empty)
