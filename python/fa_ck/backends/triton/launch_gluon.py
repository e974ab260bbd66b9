"""Launchers of the Gluon (Hopper, sm90) kernels: forward_gluon.py's forward, backward_gluon.py's
dK/dV and dq_gluon.py's dQ, with the host-made TMA descriptors and shared-memory layouts they take, and
_gluon_ok, which calls they serve. __init__.py picks them by config (GLUON); their launches go
through plans._launch like every other.
"""
from __future__ import annotations

import math

import torch

from ...params import AttnParams
from . import configs, decisions
from .host import _causal_mask, _cdiv, _keys_padded, _lse_strides, _raw_max, _strides, _tma_ok
from .plans import _launch, _tma_allocator

try:
    from .backward_gluon import bwd_dkdv_gluon_kernel
    from .dq_gluon import bwd_dq_gluon_kernel
    from .forward_gluon import fwd_gluon_kernel
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    _GLUON_ERROR = ""
except Exception as e:  # a Triton without Gluon's Hopper API: forward.py serves every call
    _GLUON_ERROR = f"{type(e).__name__}: {e}"


def _gluon_ok(q, k, v, out, p: AttnParams) -> bool:
    """Whether the Gluon kernels serve this call: fp16/bf16 (the forward: also quantised e4m3fn
    q, k, v with keys-contiguous v) without softcap, ALiBi or dropout (masks, windows and
    varlen they have; GQA the forward and dQ, dK/dV with host-made descriptors), tensors TMA
    can address (see _tma_ok; `out` is dO for the backward; head dims up to 256 in 16-bit
    types, up to 128 in fp8)."""
    dtype_ok = q.dtype in (torch.float16, torch.bfloat16) or (p.fp8 and q.dtype == torch.float8_e4m3fn)
    if _GLUON_ERROR or configs.INTERPRET or not dtype_ok or p.softcap != 0 or p.alibi_slopes is not None \
            or p.dropout_p != 0:
        return False
    return _tma_ok(q, k, v, out, keys_contiguous=v if p.fp8 else None, max_head_dim=128 if p.fp8 else 256)


_SMEM_LAYOUTS: dict = {}


def _gl_dtype(dtype: torch.dtype):
    types = {torch.float16: gl.float16, torch.float8_e4m3fn: gl.float8e4nv, torch.float32: gl.float32}
    return types.get(dtype, gl.bfloat16)


def _smem_layout4(block: list, dtype: torch.dtype):
    key = (*block, dtype)
    if key not in _SMEM_LAYOUTS:
        _SMEM_LAYOUTS[key] = gl.NVMMASharedLayout.get_default_for(block, _gl_dtype(dtype))
    return _SMEM_LAYOUTS[key]


def _smem_layout(rows: int, cols: int, dtype: torch.dtype):
    """The swizzled shared-memory layout TMA writes and wgmma reads, for (rows, cols) tiles."""
    key = (rows, cols, dtype)
    if key not in _SMEM_LAYOUTS:
        _SMEM_LAYOUTS[key] = gl.NVMMASharedLayout.get_default_for([rows, cols], _gl_dtype(dtype))
    return _SMEM_LAYOUTS[key]


def _forward_gluon(q, k, v, out, lse, cu_q, cu_k, qd, kd, vd, p: AttnParams, cfg, sq, sk, hq, hkv, b, d, scal,
                   p_scale, qk_max: float = 0.0):
    """Launch forward_gluon.py into out and lse. q, k and v go as TMA descriptors made here
    (HOST_DESC), or for varlen (and on request) as pointers, the kernel building each tile's
    descriptors on the device. fp8: q, k, v quantised (v keys-contiguous), qd, kd, vd their descales;
    or q still 16-bit (Q_CONVERT: the kernel rounds it) and qd its amax bits (int32). qk_max > 0: q and k
    quantised to it (configs.F16_SCORES_QK_MAX), the kernel's F16_SCORES (decisions.fwd_f16_scores)."""
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    q_convert = p.fp8 and q.dtype != k.dtype
    if p.fp8 and q_convert != (qd.dtype == torch.int32):
        raise AssertionError("_forward_gluon: qd must be q's int32 amax bits exactly when q is 16-bit (Q_CONVERT)")
    cfg = dict(cfg, Q_CONVERT=q_convert)      # (what the shared memory holds)
    f16_scores = qk_max > 0
    if f16_scores and not decisions.fwd_f16_scores(cfg, q_convert, sq, sk, p):
        raise AssertionError("_forward_gluon: q and k were quantised for F16_SCORES, which this config cannot take")
    bd = configs.fp8_block_d(d) if p.fp8 else configs.block_d(d)
    host_desc = bool(cfg.get("HOST_DESC", True)) and not p.varlen and _host_desc_ok(q, k, v)
    # (float32 out, fp8 inputs' option, keeps plain stores: its TMA store has not run on a GPU)
    tma_store = host_desc and bool(cfg.get("TMA_STORE")) and out.element_size() == 2 and \
        configs.fwd_gluon_smem(d, cfg, k.dtype, p.fp8, out.element_size()) <= configs.SMEM_BYTES_SM90
    o_cols = configs.fwd_gluon_out_cols(d, cfg, k.dtype, p.fp8, out.element_size())
    o_arg = _desc4(out, 64, o_cols) if tma_store else out     # (unused without TMA_STORE)
    q_rows = 64 if bm == 192 else bm      # Q's TMA box: 192 queries load as three (forward_gluon._copy_q)
    p_regs = p.fp8 and bool(cfg.get("P_REGS"))      # (call_config decides: v's keys then in key_position's order)
    if host_desc:
        q_arg, k_arg = _desc4(q, q_rows, bd), _desc4(k, bn, bd)
        v_arg = _desc4(v, bd, bn, keys_contiguous=True, padded=p_regs) if p.fp8 else _desc4(v, bn, bd)
    else:
        _tma_allocator()
        q_arg, k_arg, v_arg = q, k, v
    even_n, diag_first = decisions.fwd_whole_blocks(sq, sk, bm, bn, p.window_left, p.window_right, p.varlen, p.fp8,
                                                  bool(cfg.get("PINGPONG")), bool(cfg.get("FP8_DIAG_FIRST")))
    persistent = bool(cfg.get("PERSISTENT"))
    n_m = _cdiv(sq, bm)
    per_head = _cdiv(n_m, 2) if persistent else n_m       # forward_gluon._tile: pairs of query blocks
    units = grid = b * hq * per_head
    if persistent:
        # An odd count of query blocks leaves the middle one unpaired: one unit per head half as
        # heavy as the rest. With P programs a multiple of the units per head, program p would
        # take the same unit of every head (d64 S384 causal: half the programs all the light ones)
        sms = _sm_count(q.device)
        grid = _coprime_programs(units, per_head, sms) if n_m % 2 else min(units, sms)
    _launch(fwd_gluon_kernel, (max(1, grid), 1, 1), (
        q_arg, k_arg, v_arg, out, o_arg, lse, cu_q, cu_k, qd, kd, vd,
        *_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), v.stride(-1),
        *_strides(out, p.varlen), *_lse_strides(lse, p.varlen),
        qd.stride(0) if p.fp8 else 0, kd.stride(0) if p.fp8 else 0, sq, sk, b, hq, hq // hkv, d, scal["scale_log2"],
        scal["window_left"], scal["window_right"]), dict(
        BLOCK_N=bn, BLOCK_D=bd, NUM_BUF=cfg["num_stages"], VARLEN=p.varlen,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0,
        SMEM_Q=_smem_layout(q_rows, bd, q.dtype), SMEM_KV=_smem_layout(bn, bd, k.dtype),
        SMEM_V=_smem_layout(bd, bn, k.dtype) if p.fp8 else _smem_layout(bn, bd, k.dtype),
        SMEM_P=_smem_layout(64, bn, k.dtype),
        PINGPONG=bool(cfg.get("PINGPONG")), PERSISTENT=persistent, FP8=p.fp8, P_SCALE=p_scale, HOST_DESC=host_desc,
        TMA_STORE=tma_store, O_COLS=o_cols, SMEM_O=_smem_layout(64, o_cols, out.dtype),
        RAW_MAX=_raw_max(cfg, p, scal["scale_log2"]),
        P_REGS=p_regs, BLOCK_M=bm, EVEN_N=even_n, DIAG_FIRST=diag_first, Q_CONVERT=q_convert,
        SMEM_Q8=_smem_layout(q_rows, bd, k.dtype), LATE_SUM=bool(cfg.get("LATE_SUM")),
        F16_SCORES=f16_scores, EXP2_POLY=int(cfg.get("EXP2_POLY", 0)) if f16_scores else 0,
        QK_MAX=qk_max or p_scale, F16_WIDE=bool(cfg.get("F16_WIDE")) and f16_scores,
        Q16_EARLY=bool(cfg.get("Q16_EARLY")) and q_convert,
        num_warps=cfg["num_warps"]))


def _host_desc_ok(*tensors) -> bool:
    """Whether host-made descriptors can describe these (B, S, H, D) tensors: nothing empty (a
    tensor map has no zero-sized dimension), and no stride 0 on a dimension longer than 1 (an
    expanded tensor: TMA's strides are not known to take 0; such calls build theirs per tile)."""
    return all(t.numel() > 0 and all(st != 0 or n == 1 for st, n in zip(t.stride(), t.shape)) for t in tensors)


def _desc4(t: torch.Tensor, rows: int, cols: int, keys_contiguous: bool = False, padded: bool = False):
    """A host-made TMA descriptor for (rows, cols) tiles of t (B, S, H, D) taken as (B, H, S, D),
    or with keys_contiguous (fp8's v) as (B, H, D, S): tiles of one (batch, head), rows and
    columns past the tensor's arriving as zeros; padded: its keys to the next multiple of 16
    (P_REGS's v, whose storage holds them). Made without TensorDescriptor's checks, which
    _tma_ok has done (alignment, strides): they were a fifth of the forward's host time."""
    b, s, h, d = t.shape
    if padded:
        s = _keys_padded(s)
    sb, ss, sh, sd = t.stride()
    block = [1, 1, rows, cols]
    desc = object.__new__(TensorDescriptor)
    desc.base, desc.block_shape, desc.layout, desc.padding = t, block, _smem_layout4(block, t.dtype), "zero"
    desc.shape, desc.strides = ([b, h, d, s], [sb, sh, sd, ss]) if keys_contiguous else ([b, h, s, d], [sb, sh, ss, sd])
    return desc


_SM_COUNTS: dict = {}


def _sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of the device: a persistent kernel's program count."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SM_COUNTS:
        _SM_COUNTS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SM_COUNTS[index]


def _coprime_programs(units: int, per_head: int, sm_count: int) -> int:
    """A persistent grid whose units per head differ in weight: at most one program per SM,
    their count P coprime to the units per head, so that program p's units p, p + P, ... cycle
    through every unit of a head. (The dK/dV kernel's units are a head's key blocks, which under
    a causal mask differ up to key_blocks-fold; with P = 132 and 8 key blocks each program kept
    to two of them, and causal fwd+bwd fell from 0.88x to 0.75x cuDNN: h200-20261130-twelfth
    call 3.)"""
    if units <= sm_count:
        return units
    programs = sm_count
    while math.gcd(programs, per_head) != 1:
        programs -= 1
    return programs


def _lpt_tail_heads(cfg, p: AttnParams, heads: int, key_blocks: int, sm_count: int) -> int:
    """TAIL_LPT (the dK/dV kernel's DYNAMIC units, causal calls): how many of the last (batch, kv
    head) pairs deal their units key block by key block across them, heaviest first
    (backward_gluon_loads._dealt): those holding the last 2 x sm_count units, about the last two waves,
    so that the programs end together. A simulation of the counter's hand-out with the causal
    units' weights (h200-20261203-no-q8/tail_sim.py) had the SMs busy 78 % -> 93 % of the
    kernel's time at d128 S4k GQA 4, 88 % -> 97 % at d64, 94 % -> 99 % without GQA; head by head
    Nsight Compute measured 78 %, 87 % and 93 % (call 1). Not without a causal mask, whose units
    weigh alike."""
    if not cfg.get("TAIL_LPT") or not _causal_mask(p):
        return 0
    return min(heads, _cdiv(2 * sm_count, key_blocks))


def _dkdv_gluon(q, k, v, do, lse, delta, dk, dv, dq_acc, cu_q, cu_k, p: AttnParams, cfg, sq, sk, hkv, b, d, scal):
    """Launch backward_gluon.py into dk and dv, and with ONE_PASS dQ / scale into dq_acc (fp32 zeros).
    LSE_PREP: `lse` is bwd_preprocess's lse / scale (+inf for empty rows), not lse.
    HOST_DESC: q, k, v, do, dq_acc as host-made 4-D descriptors (not for varlen, empty or
    expanded tensors: those build theirs per program). PERSISTENT (host-made descriptors only,
    more units than SMs): one program per SM at most, each taking units in turn, with two K and V
    buffers where shared memory holds them (the defaults' up to d64); round-robin, or with
    DYNAMIC and ONE_PASS from a counter: the int32 zero just past dq_acc's elements (room made
    by __init__._dq_accumulator, checked here; zeroed with the buffer by bwd_preprocess, or made
    zeros for varlen). TMA_STORE (host-made descriptors, up to d128, where shared memory holds
    the staging tiles beside the rest): dK and dV leave by TMA stores."""
    bm, bn, bd = cfg["BLOCK_M"], cfg["BLOCK_N"], configs.block_d(d)
    assert bn == configs.gluon_block_n_bwd(d), "the kernel fixes its keys per unit (__init__ checks asked tiles)"
    one_pass = bool(cfg["ONE_PASS"])
    group = q.shape[-2] // hkv              # GQA: q heads per kv head, host-made descriptors only (__init__)
    host_desc = (bool(cfg.get("HOST_DESC")) or group > 1) and not p.varlen and _host_desc_ok(q, k, v, do)
    assert host_desc or group == 1, "GQA takes host-made descriptors (the caller checks)"
    units, sms = _cdiv(sk, bn) * hkv * b, _sm_count(q.device)
    persistent = bool(cfg.get("PERSISTENT")) and host_desc and units > sms
    # TMA_STORE: dK and dV through shared memory to TMA stores (host-made descriptors, up to d128),
    # where its staging tiles fit beside the rest (after a second K / V buffer, where that fits)
    tma_store = host_desc and bool(cfg.get("TMA_STORE")) and bd <= 128 and _tma_ok(dk, dv)
    num_kv = 2 if persistent and configs.dkdv_gluon_smem(d, dict(cfg, TMA_STORE=tma_store), q.dtype, 2) \
        <= configs.SMEM_BYTES_SM90 else 1
    tma_store = tma_store and configs.dkdv_gluon_smem(d, cfg, q.dtype, num_kv) <= configs.SMEM_BYTES_SM90
    dk_arg, dv_arg = (_desc4(dk, 64, bd), _desc4(dv, 64, bd)) if tma_store else (dk, dv)   # (unused without)
    if host_desc:
        args = (_desc4(q, bm, bd), _desc4(k, bn, bd), _desc4(v, bn, bd), _desc4(do, bm, bd))
        dq_arg = _desc4(dq_acc, bm, bd // 2) if one_pass else dq_acc
    else:
        _tma_allocator()
        args, dq_arg = (q, k, v, do), dq_acc
    # DYNAMIC (persistent, ONE_PASS): units past the first `grid` come from an atomic counter that
    # lies just past dQ's buffer (zeros: see the docstring)
    dynamic = persistent and one_pass and bool(cfg.get("DYNAMIC"))
    if dynamic and dq_acc.untyped_storage().nbytes() < (dq_acc.storage_offset() + dq_acc.numel() + 1) * 4:
        raise ValueError("DYNAMIC needs dq_acc from _dq_accumulator: its counter lies past the buffer's elements")
    grid = sms if dynamic else _coprime_programs(units, _cdiv(sk, bn), sms) if persistent else units
    tail = _lpt_tail_heads(cfg, p, b * hkv, _cdiv(sk, bn), sms) if dynamic else 0
    _launch(bwd_dkdv_gluon_kernel, (grid, 1, 1), (
        *args, lse, delta, dk, dv, dk_arg, dv_arg, dq_arg, dq_acc, dq_acc.numel() if dynamic else 0, cu_q, cu_k,
        *_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), *_strides(do, p.varlen),
        *_strides(dk, p.varlen), *_strides(dv, p.varlen), *(_strides(dq_acc, p.varlen) if one_pass else (0, 0, 0)),
        *_lse_strides(lse, p.varlen), sq, sk, d,
        p.scale, scal["scale_log2"], scal["window_left"], scal["window_right"], hkv, b, tail), dict(
        BLOCK_M=bm, BLOCK_D=bd, NUM_BUF=cfg["num_stages"], NUM_KV=num_kv, VARLEN=p.varlen,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0,
        SMEM_KV=_smem_layout(bn, bd, q.dtype), SMEM_Q=_smem_layout(bm, bd, q.dtype),
        STAGE_P=bool(cfg.get("STAGE_P")), ONE_PASS=one_pass,
        # P^T / dS^T tiles: (64 keys, the step's queries) per warpgroup, or past d128 (64 keys,
        # half the step's queries: backward_gluon._bwd_unit_dsplit)
        SMEM_P=_smem_layout(bn // 2, bm, q.dtype) if bd <= 128 else _smem_layout(bn, bm // 2, q.dtype),
        SMEM_DQ=_smem_layout(bm, bd // 2, torch.float32), HOST_DESC=host_desc,
        FROM_ZERO=bool(cfg.get("FROM_ZERO")), LSE_PREP=bool(cfg.get("LSE_PREP")), PERSISTENT=persistent,
        DYNAMIC=dynamic, GROUP=group, TMA_STORE=tma_store, SMEM_O=_smem_layout(64, bd, dk.dtype),
        num_warps=cfg["num_warps"]))


def _dq_gluon(q, k, v, do, lse, delta, dq, cu_q, cu_k, p: AttnParams, cfg, sq, sk, hq, hkv, b, d, scal):
    """Launch dq_gluon.py's dQ kernel into dq (FA_CK_TRITON_CONFIG bwd_dq GLUON); TMA_STORE:
    dQ by TMA stores, where TMA can address dq."""
    _tma_allocator()
    bm, bn, bd = cfg["BLOCK_M"], cfg["BLOCK_N"], configs.block_d(d)
    _launch(bwd_dq_gluon_kernel, (_cdiv(sq, bm), hq, b), (
        q, k, v, do, lse, delta, dq, cu_q, cu_k,
        *_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), *_strides(do, p.varlen),
        *_strides(dq, p.varlen), *_lse_strides(lse, p.varlen), sq, sk, hq // hkv, d,
        p.scale, scal["scale_log2"], scal["window_left"], scal["window_right"]), dict(
        BLOCK_N=bn, BLOCK_D=bd, NUM_BUF=cfg["num_stages"], VARLEN=p.varlen,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0,
        SMEM_Q=_smem_layout(bm, bd, q.dtype), SMEM_KV=_smem_layout(bn, bd, q.dtype),
        TMA_STORE=bool(cfg.get("TMA_STORE")) and _tma_ok(dq, max_head_dim=256), num_warps=cfg["num_warps"]))
