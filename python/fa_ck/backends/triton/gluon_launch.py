"""Launchers of the Gluon (Hopper, sm90) kernels: forward_gluon.py's forward, backward_gluon.py's
dK/dV and dq_gluon.py's dQ, with the host-made TMA descriptors and shared-memory layouts they take.
They launch what config.py decided; gluon_ok() is the fact about a call that config.py reads."""
from __future__ import annotations

import torch

from ...params import AttnParams
from . import device, fast_path
from .buffers import cdiv, lse_strides, strides, tma_ok
from .config import DkdvConfig, DqConfig, FwdConfig
from .sizes import block_d, fp8_block_d, keys_padded

try:
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from .kernels.backward_gluon import bwd_dkdv_gluon_kernel
    from .kernels.dq_gluon import bwd_dq_gluon_kernel
    from .kernels.forward_gluon import fwd_gluon_kernel
    GLUON_ERROR = ""
except Exception as e:  # a Triton without Gluon's Hopper API: forward.py and backward.py serve every call
    GLUON_ERROR = f"{type(e).__name__}: {e}"


def gluon_ok(q, k, v, out, p: AttnParams) -> bool:
    """Whether the Gluon kernels can take this call: fp16/bf16 (the forward also e4m3fn q, k, v with
    keys-contiguous v) without softcap, ALiBi or dropout, and tensors TMA can address (`out` is dO for
    the backward; head dims up to 256, fp8 up to 128)."""
    dtype_ok = q.dtype in (torch.float16, torch.bfloat16) or (p.fp8 and q.dtype == torch.float8_e4m3fn)
    if GLUON_ERROR or device.INTERPRET or not dtype_ok or p.softcap != 0 or p.alibi_slopes is not None or p.dropout_p != 0:
        return False
    return tma_ok(q, k, v, out, keys_contiguous=v if p.fp8 else None, max_head_dim=128 if p.fp8 else 256)


_SMEM_LAYOUTS: dict = {}


def _gl_dtype(dtype: torch.dtype):
    types = {torch.float16: gl.float16, torch.float8_e4m3fn: gl.float8e4nv, torch.float32: gl.float32}
    return types.get(dtype, gl.bfloat16)


def smem_layout(block: list, dtype: torch.dtype):
    """The swizzled shared-memory layout TMA writes and wgmma reads, for tiles of shape `block`."""
    key = (*block, dtype)
    if key not in _SMEM_LAYOUTS:
        _SMEM_LAYOUTS[key] = gl.NVMMASharedLayout.get_default_for(list(block), _gl_dtype(dtype))
    return _SMEM_LAYOUTS[key]


def desc4(t: torch.Tensor, rows: int, cols: int, keys_contiguous: bool = False, padded: bool = False):
    """A host-made TMA descriptor for (rows, cols) tiles of t (B, S, H, D) taken as (B, H, S, D), or
    with keys_contiguous (fp8's v) as (B, H, D, S): tiles of one (batch, head), rows and columns past
    the tensor's arriving as zeros; padded: the keys to the next multiple of 16 (the storage holds
    them). Made without TensorDescriptor's checks, which tma_ok has done."""
    b, s, h, d = t.shape
    if padded:
        s = keys_padded(s)
    sb, ss, sh, sd = t.stride()
    block = [1, 1, rows, cols]
    desc = object.__new__(TensorDescriptor)
    desc.base, desc.block_shape, desc.layout, desc.padding = t, block, smem_layout(block, t.dtype), "zero"
    desc.shape, desc.strides = ([b, h, d, s], [sb, sh, sd, ss]) if keys_contiguous else ([b, h, s, d], [sb, sh, ss, sd])
    return desc


def forward(q, k, v, out, lse, cu_q, cu_k, qd, kd, vd, p: AttnParams, cfg: FwdConfig, dims, scalars, p_scale):
    """forward_gluon.py into out and lse. fp8: q, k, v quantised (v keys-contiguous), qd, kd, vd their
    descales; or with cfg.q_convert q still 16-bit and qd its amax bits."""
    b, sq, sk, hq, hkv, d = dims
    bm, bn = cfg.block_m, cfg.block_n
    bd = fp8_block_d(d) if p.fp8 else block_d(d)
    q_rows = 64 if bm == 192 else bm          # Q's TMA box: 192 queries load as three
    if cfg.host_desc:
        q_arg, k_arg = desc4(q, q_rows, bd), desc4(k, bn, bd)
        v_arg = desc4(v, bd, bn, keys_contiguous=True, padded=cfg.p_regs) if p.fp8 else desc4(v, bn, bd)
    else:
        fast_path.tma_allocator()
        q_arg, k_arg, v_arg = q, k, v
    o_arg = desc4(out, 64, cfg.o_cols) if cfg.tma_store else out
    fast_path.launch(fwd_gluon_kernel, (cfg.programs, 1, 1), (
        q_arg, k_arg, v_arg, out, o_arg, lse, cu_q, cu_k, qd, kd, vd,
        strides(q, p.varlen), strides(k, p.varlen), (*strides(v, p.varlen), v.stride(-1)),
        strides(out, p.varlen), lse_strides(lse, p.varlen), (qd.stride(0), kd.stride(0)) if p.fp8 else (0, 0),
        sq, sk, b, hq, hq // hkv, d, scalars["scale_log2"], (p.window_left, p.window_right)), dict(
        BLOCK_N=bn, BLOCK_D=bd, NUM_BUF=cfg.num_stages, VARLEN=p.varlen,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0,
        SMEM_Q=smem_layout((q_rows, bd), q.dtype), SMEM_KV=smem_layout((bn, bd), k.dtype),
        SMEM_V=smem_layout((bd, bn), k.dtype) if p.fp8 else smem_layout((bn, bd), k.dtype),
        FP8=p.fp8, P_SCALE=p_scale, HOST_DESC=cfg.host_desc,
        TMA_STORE=cfg.tma_store, O_COLS=cfg.o_cols, SMEM_O=smem_layout((64, cfg.o_cols), out.dtype),
        RAW_MAX=cfg.raw_max, BLOCK_M=bm, EVEN_N=cfg.even_n, DIAG_FIRST=cfg.diag_first,
        Q_CONVERT=cfg.q_convert, SMEM_Q8=smem_layout((q_rows, bd), k.dtype), LATE_SUM=cfg.late_sum,
        F16_SCORES=cfg.f16_scores, QK_MAX=cfg.qk_max or p_scale, F16_WIDE=cfg.f16_wide,
        Q16_EARLY=cfg.q16_early, num_warps=cfg.num_warps))


def dkdv(q, k, v, do, lse_s, delta, dk, dv, dq_acc, cu_q, cu_k, p: AttnParams, cfg: DkdvConfig, dims, scalars):
    """backward_gluon.py into dk and dv, and with cfg.one_pass dQ / scale into dq_acc (fp32 zeros, the
    dynamic schedule's counter just past its elements). lse_s: bwd_preprocess's lse / scale."""
    b, sq, sk, hq, hkv, d = dims
    bm, bn, bd = cfg.block_m, cfg.block_n, block_d(d)
    if cfg.dynamic and dq_acc.untyped_storage().nbytes() < (dq_acc.storage_offset() + dq_acc.numel() + 1) * 4:
        raise AssertionError("the dynamic schedule's counter lies past dq_acc's elements: make it with room")
    dk_arg, dv_arg = (desc4(dk, 64, bd), desc4(dv, 64, bd)) if cfg.tma_store else (dk, dv)
    if cfg.host_desc:
        args = (desc4(q, bm, bd), desc4(k, bn, bd), desc4(v, bn, bd), desc4(do, bm, bd))
        dq_arg = desc4(dq_acc, bm, bd // 2) if cfg.one_pass else dq_acc
    else:
        fast_path.tma_allocator()
        args, dq_arg = (q, k, v, do), dq_acc
    fast_path.launch(bwd_dkdv_gluon_kernel, (cfg.programs, 1, 1), (
        *args, lse_s, delta, dk, dv, dk_arg, dv_arg, dq_arg, dq_acc, dq_acc.numel() if cfg.dynamic else 0, cu_q, cu_k,
        strides(q, p.varlen), strides(k, p.varlen), strides(v, p.varlen), strides(do, p.varlen),
        strides(dk, p.varlen), strides(dv, p.varlen), strides(dq_acc, p.varlen) if cfg.one_pass else (0, 0, 0),
        lse_strides(lse_s, p.varlen), sq, sk, d, (p.scale, scalars["scale_log2"]), (p.window_left, p.window_right),
        hkv, b, cfg.tail_heads), dict(
        BLOCK_M=bm, BLOCK_D=bd, NUM_BUF=cfg.num_stages, NUM_KV=cfg.num_kv, VARLEN=p.varlen,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0,
        SMEM_KV=smem_layout((bn, bd), q.dtype), SMEM_Q=smem_layout((bm, bd), q.dtype),
        ONE_PASS=cfg.one_pass,
        # P^T / dS^T tiles: (64 keys, the step's queries) per warpgroup, or past d128 (64 keys, half of them)
        SMEM_P=smem_layout((bn // 2, bm), q.dtype) if bd <= 128 else smem_layout((bn, bm // 2), q.dtype),
        SMEM_DQ=smem_layout((bm, bd // 2), torch.float32), HOST_DESC=cfg.host_desc,
        FROM_ZERO=cfg.from_zero, PERSISTENT=cfg.persistent,
        DYNAMIC=cfg.dynamic, GROUP=hq // hkv, TMA_STORE=cfg.tma_store, SMEM_O=smem_layout((64, bd), dk.dtype),
        num_warps=cfg.num_warps))


def dq(q, k, v, do, lse, delta, dq_out, cu_q, cu_k, p: AttnParams, cfg: DqConfig, dims, scalars):
    """dq_gluon.py's dQ kernel into dq_out."""
    b, sq, sk, hq, hkv, d = dims
    fast_path.tma_allocator()
    bm, bn, bd = cfg.block_m, cfg.block_n, block_d(d)
    fast_path.launch(bwd_dq_gluon_kernel, (cdiv(sq, bm), hq, b), (
        q, k, v, do, lse, delta, dq_out, cu_q, cu_k,
        strides(q, p.varlen), strides(k, p.varlen), strides(v, p.varlen), strides(do, p.varlen),
        strides(dq_out, p.varlen), lse_strides(lse, p.varlen), sq, sk, hq // hkv, d,
        (p.scale, scalars["scale_log2"]), (p.window_left, p.window_right)), dict(
        BLOCK_N=bn, BLOCK_D=bd, NUM_BUF=cfg.num_stages, VARLEN=p.varlen,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0,
        SMEM_Q=smem_layout((bm, bd), q.dtype), SMEM_KV=smem_layout((bn, bd), q.dtype),
        TMA_STORE=cfg.tma_store, num_warps=cfg.num_warps))
