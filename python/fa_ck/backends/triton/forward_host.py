"""The forward's host code: output buffers, the call's replay plan or its slow path, which reads
the call's facts into a CallSpec, takes the config config.py decides (after quantising, for fp8)
and launches it: forward.py's kernel, or the Gluon forward through gluon_launch.py."""
from __future__ import annotations

import math
import os

import torch

from ...params import FP8_DTYPES, AttnParams
from . import buffers, device, fast_path, fp8, gluon_launch, tuning
from .buffers import cdiv, lse_strides, placeholders, strides, tma_ok
from .config import CallSpec, FwdConfig, candidates, forward_config, forward_with_tiles
from .kernels.forward import fwd_kernel
from .sizes import block_d, fp8_block_d

WORKSPACE = 5     # the fp8 workspace's place among a forward's slots: (q, k, v, out, lse, workspace, descales)
_FP32_TINY = 2.0 ** -126


def dims(q, k, p: AttnParams) -> tuple:
    """(batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim); varlen: the longest sequences."""
    if p.varlen:
        return p.cu_seqlens_q.numel() - 1, p.max_seqlen_q, p.max_seqlen_k, q.shape[1], k.shape[1], q.shape[2]
    return q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3]


def scalars(p: AttnParams) -> dict:
    """The kernels' scalar arguments: scores in log2 units, softcap's two factors, the window."""
    log2e = 1.0 / math.log(2.0)
    cap = p.softcap if p.softcap > 0 else 1.0
    return dict(scale_log2=p.scale * log2e, softcap_in=p.scale / cap, softcap_out=cap * log2e,
                window_left=p.window_left, window_right=p.window_right, dropout_p=float(p.dropout_p))


def softmax_args(scal: dict) -> tuple:
    """forward.py's and backward.py's `softmax` argument, from scalars()."""
    return scal["scale_log2"], scal["softcap_in"], scal["softcap_out"]


def call_spec(q, k, p: AttnParams, **facts) -> CallSpec:
    """What config.py decides from: the call (shapes, dtype, features, device) and `facts` about its
    tensors (tma_ok, gluon_ok, ...)."""
    b, sq, sk, hq, hkv, d = dims(q, k, p)
    return CallSpec(arch=device.arch(q.device), dtype=q.dtype, head_dim=d, batch=b, seqlen_q=sq, seqlen_k=sk,
                    heads_q=hq, heads_kv=hkv, window_left=p.window_left, window_right=p.window_right,
                    varlen=p.varlen, softcap=p.softcap > 0, alibi=p.alibi_slopes is not None,
                    dropout=p.dropout_p > 0, deterministic=p.deterministic, fp8=p.fp8,
                    fp8_inputs=q.dtype in FP8_DTYPES, scale_positive=p.scale > 0,
                    scale_log2_normal=scalars(p)["scale_log2"] >= _FP32_TINY, sm_count=device.sm_count(q.device),
                    overrides=os.environ.get("FA_CK_TRITON_CONFIG", ""), **facts)


def kernel_flags(q, p: AttnParams, head_dim: int) -> dict:
    """The constexprs forward.py and backward.py take from the call's features."""
    bd = fp8_block_d(head_dim) if p.fp8 else block_d(head_dim)
    return dict(BLOCK_D=bd, EVEN_D=bd == head_dim, VARLEN=p.varlen, SOFTCAP=p.softcap > 0,
                ALIBI=p.alibi_slopes is not None, MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0,
                DROPOUT=p.dropout_p > 0, DOT_F32=device.INTERPRET and q.dtype in (torch.bfloat16, *FP8_DTYPES))


def extras(q, p: AttnParams) -> tuple:
    """(ALiBi slopes, their batch stride, the RNG state, cu_seqlens_q, cu_seqlens_k), placeholders where absent."""
    dummy, no_slopes, no_rng = placeholders(q.device)
    slopes = p.alibi_slopes if p.alibi_slopes is not None else no_slopes
    rng = p.rng if p.rng is not None else no_rng
    return (slopes, slopes.stride(0) if slopes.dim() == 2 else 0, rng,
            p.cu_seqlens_q if p.varlen else dummy, p.cu_seqlens_k if p.varlen else dummy)


def forward(q, k, v, p: AttnParams):
    b, sq, sk, hq, hkv, d = dims(q, k, p)
    out_dtype = (p.out_dtype or torch.bfloat16) if q.dtype in FP8_DTYPES else q.dtype
    poison = buffers.poisoning()
    out = buffers.empty(q.shape, out_dtype, q.device, poison)
    lse = buffers.empty((hq, q.shape[0]) if p.varlen else (b, hq, sq), torch.float32, q.device, poison)
    if q.dtype in FP8_DTYPES:
        p = fp8.with_unit_descales(p, q, k)       # (every fp8-inputs call has three: slots of its plan)
    descales = (p.q_descale, p.k_descale, p.v_descale)
    key = None if tuning.autotune_enabled() else fast_path.plan_key(
        "fwd", p, poison, (q, k, v, *(t for t in descales if t is not None)), (out, lse))
    plan = fast_path.find(key) if key is not None else None
    if plan is not None:
        # fp8: the quantised tensors (or the caller's v in the kernel's key order) are parts of a
        # workspace made per call, at the size the slow path's had
        work = fp8.fp8_workspace(plan.slot_bytes[WORKSPACE], q.device) if WORKSPACE in plan.slot_bytes else None
        plan.replay((q, k, v, out, lse, work, *descales))
    else:
        with fast_path.Recording(key) as rec:
            work = _slow_path(q, k, v, out, lse, p)
            rec.save((q, k, v, out, lse, work, *descales))
    if buffers.has_canaries():
        buffers.check_canaries("forward")
        out, lse = out.clone(), lse.clone()   # own storage, as the op's fake kernel promises
    return out, lse


def _slow_path(q, k, v, out, lse, p: AttnParams):
    """Works out the call's config (quantising first, for fp8) and launches it -> the fp8 workspace
    the launches read, or None."""
    specs = []

    def choose(fq, fk, fv) -> FwdConfig:
        specs.append(call_spec(q, k, p, out_bytes=out.element_size(),
                               tma_ok=tma_ok(fk, fv, keys_contiguous=fv if p.fp8 else None),
                               q_tma_ok=p.fp8 and tma_ok(q), gluon_ok=gluon_launch.gluon_ok(fq, fk, fv, out, p),
                               host_desc_ok=buffers.host_desc_ok(fq, fk, fv)))
        return forward_config(specs[-1])
    work = None
    if p.fp8:
        q, k, v, qd, kd, vd, cfg, work = fp8.prepare(q, k, v, p, choose)
    else:
        cfg = choose(q, k, v)
        qd = kd = vd = placeholders(q.device)[1]
    p_scale = float(torch.finfo(v.dtype).max) if p.fp8 else 1.0

    def run(c: FwdConfig):
        if c.gluon:
            gluon_launch.forward(q, k, v, out, lse, *extras(q, p)[3:], qd, kd, vd, p, c, dims(q, k, p), scalars(p),
                                 p_scale)
        else:
            launch_triton(q, k, v, out, lse, qd, kd, vd, p, c, p_scale)
    if tuning.autotune_enabled() and specs[-1].arch != "interpreter":
        # the candidates keep the quantisation the inputs already had
        same = ("gluon", "tma", "p_regs", "q_convert", "qk_max")
        options = []
        for tiles in candidates("fwd", specs[-1], cfg):
            try:
                c = forward_with_tiles(specs[-1], tiles)
            except ValueError:
                continue
            if all(getattr(c, f) == getattr(cfg, f) for f in same):
                options.append(c)
        cfg = tuning.pick_config("fwd", specs[-1], cfg, options, run)
    run(cfg)
    return work


def launch_triton(q, k, v, out, lse, qd, kd, vd, p: AttnParams, cfg: FwdConfig, p_scale: float):
    """forward.py's kernel into out and lse."""
    b, sq, sk, hq, hkv, d = dims(q, k, p)
    slopes, slope_stride, rng, cu_q, cu_k = extras(q, p)
    scal = scalars(p)
    if cfg.tma:
        fast_path.tma_allocator()
    fast_path.launch(fwd_kernel, (cdiv(sq, cfg.block_m), hq, b), (
        q, k, v, out, lse, slopes, rng, cu_q, cu_k, qd, kd, vd,
        strides(q, p.varlen), strides(k, p.varlen), (*strides(v, p.varlen), v.stride(-1)),
        strides(out, p.varlen), lse_strides(lse, p.varlen), slope_stride,
        (qd.stride(0), kd.stride(0)) if p.fp8 else (0, 0),
        sq, sk, hq // hkv, d, softmax_args(scal), (p.window_left, p.window_right), scal["dropout_p"], sk), dict(
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, TMA=cfg.tma, RAW_MAX=cfg.raw_max, **kernel_flags(q, p, d),
        FP8=p.fp8, P_SCALE=p_scale, num_warps=cfg.num_warps, num_stages=cfg.num_stages))
