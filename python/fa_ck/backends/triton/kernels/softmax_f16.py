"""The Gluon fp8 forward's softmax on f16 scores (F16_SCORES, where config.py
takes them): QK^T of e4m3 q and k summed into an f16 accumulator, then two scores per
instruction, f16 pairs in one register: the row max by packed halves (HMNMX2 / VHMNMX), the
exponent's argument one fma.rn.f16x2, the exponentials ex2.approx.f16x2 (two MUFU.EX2.F16 each)
or, for a quarter of the columns, a quadratic on the FMA pipe (_exp2_poly), P in f16,
rounded to e4m3 a pair per conversion. The statistics (row max, row sum, alpha) stay f32.

Why: the fp8 loop waits on its exponentials (MUFU: 16 per cycle per SM, 64 per thread and
128-key block) and on each warpgroup's chain of latencies. Packed halves cut the loop's
instructions, the FMA pipe takes a share of the exponentials off the MUFU, and S in f16 takes
half the registers, so full calls take 256-key blocks (docs/performance.md, Kernel choices).

Triton would not do this by itself: an f16 accumulator's scores go back to f32 one by one for
Triton's max, exp2 and sum, so each packed step is inline asm on tensors whose consecutive
elements (a thread's adjacent keys) share a register. q and k are quantised to 16, not 448, so no
sum of 128 products passes f16's 65504 (fp8.quantize's qk_max). Heads whose scale could carry a
scaled score past f16 (f16_scores_fit) take f16_step's wide form, one instruction more per pair;
256-key blocks past d64 take it on every tile (F16_WIDE).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def _h2(a, b, op: gl.constexpr):
    """a op b on f16 tensors, two values of a thread per instruction (op: PTX's max / add on f16x2)."""
    return gl.inline_asm_elementwise(op + ".f16x2 $0, $1, $2;", "=r,r,r", [a, b], dtype=gl.float16, is_pure=True,
                                     pack=2)


@gluon.jit
def _halves(x):
    """x's columns in two halves, the left and the right (each thread's pairs of adjacent keys kept whole)."""
    R: gl.constexpr = x.shape[0]
    N: gl.constexpr = x.shape[1]
    return gl.split(x.reshape([R, 2, N // 2]).permute((0, 2, 1)))


@gluon.jit
def _row_max_f16(x, row: gl.constexpr):
    """Row max of f16 scores: halves folded by packed max down to 8 columns, then Triton's reduction."""
    for _ in gl.static_range(4):
        a, b = _halves(x)
        x = _h2(a, b, "max")
    return gl.convert_layout(gl.max(x, 1), row)


@gluon.jit
def row_sum_f16(x, row: gl.constexpr):
    """Row sum of f16 P (values up to P_SCALE: 16 of them stay under f16's max), folded as
    _row_max_f16, the last 8 columns summed in f32."""
    for _ in gl.static_range(4):
        a, b = _halves(x)
        x = _h2(a, b, "add")
    return gl.convert_layout(gl.sum(x.to(gl.float32), 1), row)


@gluon.jit
def _join(left, right):
    """_halves' inverse: left's columns, then right's."""
    R: gl.constexpr = left.shape[0]
    N: gl.constexpr = left.shape[1]
    return gl.join(left, right).permute((0, 2, 1)).reshape([R, 2 * N])


@gluon.jit
def _rows(x, s):
    """Row vector x as a column broadcast against s's layout."""
    return gl.convert_layout(x, gl.SliceLayout(1, s.type.layout))[:, None]


@gluon.jit
def _exp2_mufu(s, scale, neg):
    """2^(s * scale + neg) (scale, neg per row), f16 pairs, on the MUFU (ex2.approx.f16x2: two MUFU.EX2.F16)."""
    scale = _rows(scale, s)
    neg = _rows(neg, s)
    return gl.inline_asm_elementwise("{ .reg .b32 t; fma.rn.f16x2 t, $1, $2, $3; ex2.approx.f16x2 $0, t; }",
                                     "=r,r,r,r", [s, scale, neg], dtype=gl.float16, is_pure=True, pack=2)


@gluon.jit
def _exp2_poly(s, scale, neg):
    """2^(s * scale + neg), f16 pairs, on the FMA pipe: the argument clamped at -14 (2^-14 rounds to 0
    in e4m3 times P_SCALE's room), rounded to j by adding 1536 (f16's ulp there is 1), 2^f for
    f in [-0.5, 0.5] by a quadratic (0.2 % at most), 2^j made from j's bits: (t - 0x65F1) << 10 per
    half (j + 15 in 1..24: neither half borrows nor carries into the other)."""
    scale = _rows(scale, s)
    neg = _rows(neg, s)
    return gl.inline_asm_elementwise(
        "{ .reg .b32 x, t, j, f, p, e, c; "
        "fma.rn.f16x2 x, $1, $2, $3; mov.b32 c, 0xCB00CB00; max.f16x2 x, x, c; "
        "mov.b32 c, 0x66006600; add.rn.f16x2 t, x, c; sub.rn.f16x2 j, t, c; sub.rn.f16x2 f, x, j; "
        "mov.b32 c, 0x33AD33AD; mov.b32 p, 0x39A039A0; fma.rn.f16x2 p, f, c, p; "
        "mov.b32 c, 0x3C003C00; fma.rn.f16x2 p, p, f, c; "
        "sub.u32 e, t, 0x65F165F1; shl.b32 e, e, 10; mul.rn.f16x2 $0, p, e; }",
        "=r,r,r,r", [s, scale, neg], dtype=gl.float16, is_pure=True, pack=2)


# The largest scaled score (log2 units) a tile may have for f16_step's one fma per pair: the
# exponent's offset P_LOG2 - row max x scale is an f16, and so is the scale. Half f16's 65504 leaves
# room for both; past it the wide step.
F16_SCORE_LIMIT = gl.constexpr(32768.0)


@gluon.jit
def f16_scores_fit(scale_log2, QK_MAX: gl.constexpr, head_dim):
    """Whether no score of a tile can leave f16's range in f16_step: |q8 . k8| <= QK_MAX^2 x head_dim,
    times the tile's scale (> 0), at most F16_SCORE_LIMIT. At d128 and softmax scale 1/sqrt(128) that
    holds while q's amax x k's amax <= ~2000 (logits of N(0, 1) inputs: amaxes ~4.5); other heads
    take the wide step (f16_step's F16_WIDE). It guards the range, not the precision: the one-fma
    step rounds P_LOG2 - max x scale to f16, so each block's weights after the first (the first
    takes the f32 _step) move by up to ~|max x scale| x 2^-11 in log2 units, which e4m3's own
    rounding dwarfs (docs/performance.md, Kernel choices). 256-key blocks past d64 compile the
    wide step alone (F16_WIDE, config.py)."""
    return scale_log2 * (QK_MAX * QK_MAX * head_dim) <= F16_SCORE_LIMIT


@gluon.jit
def f16_step(qk, m_i, l_i, scale_log2, P_LOG2: gl.constexpr, ROW_SUM: gl.constexpr, F16_WIDE: gl.constexpr = False):
    """_softmax's step (RAW_MAX, no mask) on f16 scores (F16_SCORES), two scores per instruction: the
    row max, the exponent's argument (one f16x2 fma), the exponentials (ex2.approx.f16x2), P in
    f16; the statistics stay f32. F16_WIDE (a tile f16_scores_fit refused): the argument is
    (s - max) x scale + P_LOG2, one packed subtraction more per pair: s - max lies in [-65536, 0]
    (f16's -inf at worst, whose P is 0 as it should be) whatever the logits' size; the scale held
    at f16's max (past it a raw unit of score is 45000 nats)."""
    row: gl.constexpr = m_i.type.layout
    m_new = gl.maximum(m_i, _row_max_f16(qk, row).to(gl.float32))
    m_scaled = m_new * scale_log2
    if F16_WIDE:    # (m_new: a max of f16 scores, exact in f16)
        qk = _h2(qk, _rows(m_new.to(gl.float16), qk), "sub")
        neg = gl.full_like(m_i, P_LOG2).to(gl.float16)
        scale = gl.minimum(gl.full_like(m_i, scale_log2), 65504.0).to(gl.float16)
    else:
        neg = (P_LOG2 - m_scaled).to(gl.float16)
        scale = gl.full_like(m_i, scale_log2).to(gl.float16)
    # a quarter of the columns on the FMA pipe (_exp2_poly), the rest on the MUFU
    a, b = _halves(qk)
    a1, a2 = _halves(a)
    left = gl.convert_layout(_join(_exp2_poly(a1, scale, neg), _exp2_mufu(a2, scale, neg)), a.type.layout)
    p = gl.convert_layout(_join(left, _exp2_mufu(b, scale, neg)), qk.type.layout)   # (the same registers)
    alpha = gl.exp2(m_i * scale_log2 - m_scaled)
    l_i = l_i * alpha
    if ROW_SUM:
        l_i = l_i + row_sum_f16(p, row)
    return p, alpha, m_new, l_i


@gluon.jit
def fp8_operand_f16(p):
    """_fp8_operand for f16 P (F16_SCORES): one conversion per f16x2 register."""
    return gl.inline_asm_elementwise(
        "{ .reg .b16 lo, hi; cvt.rn.satfinite.e4m3x2.f16x2 lo, $1; "
        "cvt.rn.satfinite.e4m3x2.f16x2 hi, $2; mov.b32 $0, {lo, hi}; }",
        "=r,r,r", [p], dtype=gl.int8, is_pure=True, pack=4).to(gl.float8e4nv, bitcast=True)
