"""Hopper (sm90) Gluon building blocks that the forward (forward_gluon.py) and the backward
(backward_gluon.py's dK/dV, dq_gluon.py's dQ) share: the wgmma accumulator's layout, a sequence's bounds, per-head TMA
descriptors, TMA copies into shared memory and the K / V rings a producer partition streams
them through (full / empty mbarriers), and the TMA store of an output tile.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from .common import key_blocks, scores

partition_barrier = getattr(gl, "barrier", None) or gl.thread_barrier    # (thread_barrier in Triton 3.6)

# The key-block bounds and the score mask are forward.py's, compiled again as Gluon.
gl_key_blocks = gluon.jit(key_blocks.fn)
gl_scores = gluon.jit(scores.fn)


@gluon.constexpr_function
def acc_layout(cols, dtype):
    """The register layout of a warpgroup's wgmma accumulator, (64 rows, cols) fp32, for operands
    of dtype (its instruction's K: 32 bytes)."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                     instr_shape=[16, cols, 256 // dtype.primitive_bitwidth])


@gluon.jit
def gl_sequence(CU_Q, CU_K, b, seqlen_q, seqlen_k, VARLEN: gl.constexpr):
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
def head_desc(head, start, stride_row, rows, head_dim, BLOCK_ROWS: gl.constexpr, BLOCK_D: gl.constexpr,
          LAYOUT: gl.constexpr):
    """A TMA descriptor for (BLOCK_ROWS, BLOCK_D) tiles of one head's (rows, head_dim) matrix from
    row `start` of `head`: rows past the sequence and columns past head_dim load as zeros and
    are never stored. Built per (sequence, head), so varlen bounds come free."""
    return tma.make_tensor_descriptor(head + start * stride_row, [rows, head_dim], [stride_row, 1],
                                      [BLOCK_ROWS, BLOCK_D], LAYOUT)


@gluon.jit
def block_key(lo, j, n_blocks, BLOCK_N: gl.constexpr, DIAG_FIRST: gl.constexpr):
    """The first key of the j-th of a tile's n_blocks blocks from lo, in the order they stream:
    up from lo, or DIAG_FIRST down from the last (the causal diagonal's block first)."""
    if DIAG_FIRST:
        j = n_blocks - 1 - j
    return lo + j * BLOCK_N


@gluon.jit
def issue_tile(desc, row, col, bar, dst, b, h, FOUR_D: gl.constexpr):
    """TMA of one (rows, cols) tile into dst, completing on bar (its bytes expected by the caller).
    FOUR_D: desc is a host-made descriptor over (batch, heads, rows, cols), the tile that of (b,
    h); else a per-head 2-D one."""
    if FOUR_D:
        tma.async_copy_global_to_shared(desc, [b, h, row, col], bar, dst.reshape([1, 1, dst.shape[0], dst.shape[1]]))
    else:
        tma.async_copy_global_to_shared(desc, [row, col], bar, dst)


@gluon.jit
def copy_tile(desc, row, col, bar, dst, b, h, FOUR_D: gl.constexpr):
    """issue_tile, expecting the tile's bytes on bar first."""
    mbarrier.expect(bar, desc.block_type.nbytes)
    issue_tile(desc, row, col, bar, dst, b, h, FOUR_D)


@gluon.jit
def ring_barriers(NUM_BUF: gl.constexpr, CONSUMERS: gl.constexpr = 2):
    """The K and V rings' mbarriers, initialised: (k_full, v_full, k_empty, v_empty). A full
    barrier completes on its tile's TMA bytes, an empty one on every consumer warpgroup's arrival."""
    k_full = gl.allocate_shared_memory(gl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    v_full = gl.allocate_shared_memory(gl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_BUF):
        mbarrier.init(k_full.index(i), count=1)
        mbarrier.init(v_full.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=CONSUMERS)
        mbarrier.init(v_empty.index(i), count=CONSUMERS)
    return k_full, v_full, k_empty, v_empty


@gluon.jit
def invalidate_rings(k_full, v_full, k_empty, v_empty):
    NUM_BUF: gl.constexpr = k_full.shape[0]
    for i in gl.static_range(NUM_BUF):
        mbarrier.invalidate(k_full.index(i))
        mbarrier.invalidate(v_full.index(i))
        mbarrier.invalidate(k_empty.index(i))
        mbarrier.invalidate(v_empty.index(i))


@gluon.jit
def stream_kv(k_desc, v_desc, k_smem, v_smem, k_full, v_full, k_empty, v_empty, lo, n_blocks,
               V_KEYS_MAJOR: gl.constexpr = False, start=0, b=0, h=0, FOUR_D: gl.constexpr = False,
               DIAG_FIRST: gl.constexpr = False):
    """K_j and V_j from key lo + j * BLOCK_N (DIAG_FIRST: the blocks last to first, block_key)
    into buffer j % NUM_BUF of their rings, each once
    both consumers released the buffer's previous tile (its empty barrier). V_KEYS_MAJOR: v's
    descriptor is over (head_dim, keys) (fp8's keys-contiguous v). start: blocks this partition
    streamed before (a persistent program's earlier tiles): ring positions continue from it.
    FOUR_D: host-made descriptors over (batch, heads, ...), the tiles those of (b, h)."""
    BLOCK_N: gl.constexpr = k_smem.shape[1]     # (k_desc's block is (1, 1, BLOCK_N, BLOCK_D) with FOUR_D)
    NUM_BUF: gl.constexpr = k_smem.shape[0]
    for j in range(n_blocks):
        it = start + j
        buf = it % NUM_BUF
        reuse = it >= NUM_BUF                # buffer's previous tile: block it - NUM_BUF
        phase = ((it // NUM_BUF) & 1) ^ 1
        key = block_key(lo, j, n_blocks, BLOCK_N, DIAG_FIRST)
        mbarrier.wait(k_empty.index(buf), phase, pred=reuse)
        copy_tile(k_desc, key, 0, k_full.index(buf), k_smem.index(buf), b, h, FOUR_D)
        mbarrier.wait(v_empty.index(buf), phase, pred=reuse)
        if V_KEYS_MAJOR:
            copy_tile(v_desc, 0, key, v_full.index(buf), v_smem.index(buf), b, h, FOUR_D)
        else:
            copy_tile(v_desc, key, 0, v_full.index(buf), v_smem.index(buf), b, h, FOUR_D)


@gluon.jit
def store_out(O_DESC, o_smem, out, b, h, m0, col, FOUR_D: gl.constexpr = True):
    """out (64 rows, o_smem's columns from col) through o_smem to a TMA store, not waited for.
    FOUR_D: O_DESC is a host-made descriptor over (batch, heads, rows, cols), the tile that of (b,
    h); else a per-head 2-D one."""
    o_smem.store(out)
    fence_async_shared()
    partition_barrier()              # the whole tile written before one thread issues the store
    if FOUR_D:
        tma.async_copy_shared_to_global(O_DESC, [b, h, m0, col],
                                        o_smem.reshape([1, 1, o_smem.shape[0], o_smem.shape[1]]))
    else:
        tma.async_copy_shared_to_global(O_DESC, [m0, col], o_smem)
