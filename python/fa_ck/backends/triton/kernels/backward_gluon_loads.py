"""The Gluon dK/dV kernel's work and its loads (backward_gluon.py): which unit (kv head, key
block) a program takes (dkdv_tile; with DYNAMIC, from a counter, the last heads' units dealt
heaviest first: dealt_unit), the producer warp that loads each unit's K and V once and streams its
query blocks' Q and dO through the rings by TMA (bwd_producer, _produce_unit), and the unit's
number handed from the producer to the consumers through shared memory (_publish_unit,
unit_at). The consumers' side, the gradients, is backward_gluon.py's."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

from .common import query_blocks
from .gluon_common import issue_tile, gl_sequence

# the query-block bounds are backward.py's, compiled again as Gluon (the score mask, the sequence
# bounds and the descriptor helper come from gluon_common)
_query_blocks = gluon.jit(query_blocks.fn)


@gluon.jit
def dkdv_tile(u, n_kb, num_heads, CU_Q, CU_K, seqlen_q, seqlen_k, window, BLOCK_M: gl.constexpr,
               BLOCK_N: gl.constexpr, VARLEN: gl.constexpr, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr):
    """Work unit u: key block u % n_kb of kv head (u // n_kb) % num_heads of batch entry
    u // (n_kb * num_heads), a head's key blocks side by side: they stream the same Q and dO,
    which then stay in L2 (docs/performance.md, Kernel choices) -> (b, h, first key n0, q_start,
    k_start, seqlen_q, seqlen_k, and the query blocks: lo, full_lo, full_hi, their count). window:
    (left, right)."""
    window_left, window_right = window
    n0 = (u % n_kb) * BLOCK_N
    h = (u // n_kb) % num_heads
    b = u // (n_kb * num_heads)
    q_start, k_start, seqlen_q, seqlen_k = gl_sequence(CU_Q, CU_K, b, seqlen_q, seqlen_k, VARLEN)
    lo, full_lo, full_hi, hi = _query_blocks(n0, seqlen_q, seqlen_k, window_left, window_right, BLOCK_M, BLOCK_N,
                                             MASK_LEFT, MASK_RIGHT)
    n_blocks = gl.cdiv(gl.maximum(hi - lo, 0), BLOCK_M)
    return b, h, n0, q_start, k_start, seqlen_q, seqlen_k, lo, full_lo, full_hi, n_blocks


@gluon.jit
def bwd_producer(k_desc, v_desc, q_desc, do_desc, k_smem, v_smem, q_smem, do_smem, kv_bar, kv_empty, q_full, q_empty,
                  unit_smem, counter, u0, n_units, n_kb, num_heads, tail_heads, CU_Q, CU_K, seqlen_q, seqlen_k,
                  window, VARLEN: gl.constexpr, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr,
                  HOST_DESC: gl.constexpr, PERSISTENT: gl.constexpr, DYNAMIC: gl.constexpr, GROUP: gl.constexpr):
    """One warp: per work unit, its K and V into buffer t % NUM_KV once both consumers are done
    with unit t - NUM_KV's (kv_empty), then Q_j and dO_j (j counts steps across units) into
    buffer j % NUM_BUF once the consumers freed it: a persistent program loads the next unit's
    tiles under this one's last steps and epilogue. PERSISTENT: units u0, u0 + num_programs, ...;
    DYNAMIC: u0, then each from the counter, published to the consumers in unit_smem (a number
    past the last unit, once no unit is left, stops them), the last tail_heads heads' units dealt
    heaviest first (dealt_unit). HOST_DESC: the descriptors are host-made 4-D ones over (batch,
    heads, rows, head_dim)."""
    if DYNAMIC:
        j = 0
        t = 0
        u = u0
        while u < n_units:
            j = _produce_unit(k_desc, v_desc, q_desc, do_desc, k_smem, v_smem, q_smem, do_smem, kv_bar, kv_empty,
                              q_full, q_empty, unit_smem, dealt_unit(u, n_units, n_kb, tail_heads), j, t, n_kb, num_heads,
                              CU_Q, CU_K, seqlen_q, seqlen_k, window, VARLEN, MASK_LEFT, MASK_RIGHT, HOST_DESC,
                              DYNAMIC, GROUP)
            # the next unit, asked for once this one's loads are all issued: the atomic's round
            # trip (the warp waits for it) falls where it would wait for the consumers anyway
            u = gl.num_programs(0) + gl.atomic_add(counter, 1)
            t += 1
        # no unit left: u (>= n_units) in the next slot tells the consumers to stop
        kb = t % unit_smem.shape[0]
        mbarrier.wait(kv_empty.index(kb), ((t // unit_smem.shape[0]) & 1) ^ 1, pred=t >= unit_smem.shape[0])
        _publish_unit(unit_smem, kb, u)
        mbarrier.arrive(kv_bar.index(kb), count=1)
    elif PERSISTENT:
        j = 0
        t = 0
        for u in range(u0, n_units, gl.num_programs(0)):
            j = _produce_unit(k_desc, v_desc, q_desc, do_desc, k_smem, v_smem, q_smem, do_smem, kv_bar, kv_empty,
                              q_full, q_empty, unit_smem, u, j, t, n_kb, num_heads, CU_Q, CU_K, seqlen_q, seqlen_k,
                              window, VARLEN, MASK_LEFT, MASK_RIGHT, HOST_DESC, DYNAMIC, GROUP)
            t += 1
    else:   # one unit: no loop-carried counters (u0 * 0: a 0 that the compiler folds, not a constexpr)
        _produce_unit(k_desc, v_desc, q_desc, do_desc, k_smem, v_smem, q_smem, do_smem, kv_bar, kv_empty, q_full,
                      q_empty, unit_smem, u0, u0 * 0, u0 * 0, n_kb, num_heads, CU_Q, CU_K, seqlen_q, seqlen_k,
                      window, VARLEN, MASK_LEFT, MASK_RIGHT, HOST_DESC, DYNAMIC, GROUP)


@gluon.jit
def dealt_unit(u, n_units, n_kb, tail_heads):
    """The unit (dkdv_tile's number) that DYNAMIC's u-th hand-out deals: u itself, head by head
    (a head's key blocks together share its Q and dO in L2), but key block by key block across
    the last tail_heads heads (DkdvConfig.tail_heads), so that under a causal mask the last units
    dealt are the lightest and the programs end together; head by head, the last units would be a
    head's first key blocks, the longest, which GQA makes GROUP times longer (docs/performance.md,
    Kernel choices). (Plain arithmetic: tests run it on ints.)"""
    first = n_units - tail_heads * n_kb
    if (u >= first) & (u < n_units):
        i = u - first
        tail = tail_heads + (tail_heads == 0)      # (never 0 here; the division is compiled either way)
        u = first + (i % tail) * n_kb + i // tail
    return u


@gluon.jit
def _produce_unit(k_desc, v_desc, q_desc, do_desc, k_smem, v_smem, q_smem, do_smem, kv_bar, kv_empty, q_full, q_empty,
                  unit_smem, u, j, t, n_kb, num_heads, CU_Q, CU_K, seqlen_q, seqlen_k, window, VARLEN: gl.constexpr,
                  MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr, HOST_DESC: gl.constexpr, DYNAMIC: gl.constexpr,
                  GROUP: gl.constexpr):
    """bwd_producer's unit u, the program's t-th, after j steps -> j after it. GQA (GROUP q heads
    per kv head h): the query blocks of q heads h * GROUP, h * GROUP + 1, ... in turn."""
    BLOCK_M: gl.constexpr = q_smem.shape[1]
    BLOCK_N: gl.constexpr = k_smem.shape[1]
    NUM_BUF: gl.constexpr = q_smem.shape[0]
    NUM_KV: gl.constexpr = k_smem.shape[0]
    b, h, n0, _, _, _, _, lo, _, _, n_blocks = dkdv_tile(u, n_kb, num_heads, CU_Q, CU_K, seqlen_q, seqlen_k, window,
                                                        BLOCK_M, BLOCK_N, VARLEN, MASK_LEFT, MASK_RIGHT)
    kb = t % NUM_KV
    mbarrier.wait(kv_empty.index(kb), ((t // NUM_KV) & 1) ^ 1, pred=t >= NUM_KV)
    if DYNAMIC:       # the unit's number, for the consumers once kv_bar completes (its arrive releases it)
        _publish_unit(unit_smem, kb, u)
    kv_bar_t = kv_bar.index(kb)
    mbarrier.expect(kv_bar_t, k_desc.block_type.nbytes + v_desc.block_type.nbytes)
    issue_tile(k_desc, n0, 0, kv_bar_t, k_smem.index(kb), b, h, HOST_DESC)
    issue_tile(v_desc, n0, 0, kv_bar_t, v_smem.index(kb), b, h, HOST_DESC)
    for g in range(GROUP):                    # GQA: the kv head's q heads in turn (GROUP 1: one trip)
        for i in range(n_blocks):
            buf = j % NUM_BUF
            mbarrier.wait(q_empty.index(buf), ((j // NUM_BUF) & 1) ^ 1, pred=j >= NUM_BUF)
            # Q and dO of a block share one barrier: the consumers need both
            bar = q_full.index(buf)
            mbarrier.expect(bar, q_desc.block_type.nbytes + do_desc.block_type.nbytes)
            issue_tile(q_desc, lo + i * BLOCK_M, 0, bar, q_smem.index(buf), b, h * GROUP + g, HOST_DESC)
            issue_tile(do_desc, lo + i * BLOCK_M, 0, bar, do_smem.index(buf), b, h * GROUP + g, HOST_DESC)
            j += 1
    return j


@gluon.jit
def _publish_unit(unit_smem, kb, u):
    """The producer's unit number u into slot kb (DYNAMIC), before it arrives on kv_bar[kb]."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    unit_smem.index(kb).store(gl.full([1], u, gl.int32, layout))


@gluon.jit
def unit_at(unit_smem, kv_bar, t):
    """A consumer's t-th unit (DYNAMIC): the number the producer published with its K and V."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    kb = t % unit_smem.shape[0]
    mbarrier.wait(kv_bar.index(kb), (t // unit_smem.shape[0]) & 1)
    return gl.max(unit_smem.index(kb).load(layout), axis=0)
