"""The backward's host code: gradient buffers, the call's replay plan or its slow path, which reads
the call's facts into a CallSpec, takes the configs config.py decides and launches them:
bwd_preprocess, the dK/dV kernel (with the one pass, dQ too, then dq_from_acc), else the dQ kernel."""
from __future__ import annotations

import torch

from ...params import AttnParams
from . import buffers, fast_path, gluon_launch, tuning
from .buffers import cdiv, lse_strides, placeholders, strides, tma_ok
from .config import (BwdConfig, DkdvConfig, DqConfig, backward_config, backward_with, candidates, dkdv_with_tiles,
                     dq_with_tiles)
from .forward_host import call_spec, dims, extras, kernel_flags, scalars, softmax_args
from .kernels.backward import bwd_dkdv_kernel, bwd_dq_kernel, bwd_preprocess, dq_from_acc


def backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    lse = lse.contiguous()                   # delta below shares lse's strides
    if do.stride(-1) != 1:
        do = do.contiguous()
    poison = buffers.poisoning()
    dq = buffers.empty(q.shape, q.dtype, q.device, poison)
    dk = buffers.empty(k.shape, k.dtype, k.device, poison)
    dv = buffers.empty(v.shape, v.dtype, v.device, poison)
    ins = [do, q, k, v, out, lse]
    key = None if tuning.autotune_enabled() else fast_path.plan_key("bwd", p, poison, ins, [dq, dk, dv],
                                                                      dlse is None)
    plan = fast_path.find(key) if key is not None else None
    # delta, lse / scale and, replaying a one-pass plan, its fp32 dQ buffer: one allocation, each part
    # 16-byte aligned (so the plan key takes them as aligned)
    n = lse.numel()
    n_pad = cdiv(n, 4) * 4
    one_pass = plan is not None and plan.one_pass
    temps = buffers.empty((2 * n_pad + (q.numel() + 4 if one_pass else 0),), torch.float32, lse.device, poison)
    delta, lse_s = temps[:n].view(lse.shape), temps[n_pad:n_pad + n].view(lse.shape)
    slots = ins + [dq, dk, dv, delta, lse_s]
    if plan is not None:
        # (the fp32 dQ buffer, zeroed by the replayed bwd_preprocess with the counter past its end:
        # plans are never of varlen calls, whose rows outside every sequence it would not zero)
        slots.append(temps[2 * n_pad:2 * n_pad + q.numel()].view(q.shape) if one_pass else None)
        if dlse is None:
            plan.replay(slots)
        else:
            plan.replay(slots, stop=1)                # the slow path's first launch: bwd_preprocess
            delta -= dlse
            plan.replay(slots, start=1)
    else:
        with fast_path.Recording(key) as rec:
            dq_acc = _slow_path(do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, p, dlse)
            rec.save(slots + [dq_acc], one_pass=dq_acc is not None)
    if buffers.has_canaries():
        buffers.check_canaries("backward")
        dq, dk, dv = dq.clone(), dk.clone(), dv.clone()
    return dq, dk, dv


def dq_accumulator(q: torch.Tensor, zeros: bool = True) -> torch.Tensor:
    """The one pass's fp32 dQ / scale buffer in q's shape (contiguous), with 16 bytes past its end for
    the dynamic schedule's unit counter, both zeros: made so here, or left to bwd_preprocess (calls
    other than varlen, whose rows outside every sequence no program of it covers)."""
    n = q.numel()
    return (torch.zeros if zeros else torch.empty)(n + 4, dtype=torch.float32, device=q.device)[:n].view(q.shape)


def _slow_path(do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, p: AttnParams, dlse):
    """Works out the call's configs and launches them -> the one pass's fp32 dQ buffer (dq / scale,
    which dq_from_acc scaled into dq), or None when the dQ kernel wrote dq."""
    spec = call_spec(q, k, p, gluon_ok=gluon_launch.gluon_ok(q, k, v, do, p),
                     host_desc_ok=buffers.host_desc_ok(q, k, v, do), dkdv_tma_ok=tma_ok(dk, dv),
                     dq_tma_ok=tma_ok(dq, max_head_dim=256))
    cfg = backward_config(spec)
    args = (do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, p)
    if tuning.autotune_enabled() and spec.arch != "interpreter":
        cfg = _tuned(spec, cfg, args)
    one_pass = cfg.dkdv.one_pass
    dq_acc = dq_accumulator(q, zeros=p.varlen) if one_pass else None
    preprocess(out, do, lse, delta, lse_s, None if dq_acc is None or p.varlen else dq_acc, p, cfg)
    if dlse is not None:
        # d lse / d S = P, so a gradient on lse enters as dS = P * (dP - (delta - dlse))
        delta -= dlse
    launch_dkdv(*args, dq_acc, cfg.dkdv)
    if one_pass:                              # dq / scale was accumulated by the dK/dV kernel
        fast_path.launch(dq_from_acc, (cdiv(dq.numel(), cfg.dq_scale_block),), (dq_acc, dq, dq.numel(), p.scale),
                         dict(BLOCK=cfg.dq_scale_block))
        return dq_acc
    launch_dq(*args, cfg.dq)
    return None


def _tuned(spec, cfg: BwdConfig, args) -> BwdConfig:
    """Autotune: the fastest candidate tiles of each kernel for this call (cached on disk); the dK/dV
    kernel's timings read the delta of one bwd_preprocess run first."""
    do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, p = args

    def options(kernel, base, derive, same):
        found = []
        for tiles in candidates(kernel, spec, base):
            try:
                c = derive(spec, tiles)
            except ValueError:
                continue
            if all(getattr(c, f) == getattr(base, f) for f in same):
                found.append(c)
        return found

    def run_dkdv(c: DkdvConfig):
        launch_dkdv(*args, dq_accumulator(q) if c.one_pass else None, c)
    dkdv = tuning.pick_config("bwd_dkdv", spec, cfg.dkdv,
                              options("bwd_dkdv", cfg.dkdv, dkdv_with_tiles, ("gluon", "one_pass")), run_dkdv,
                              setup=lambda: preprocess(out, do, lse, delta, lse_s, None, p, cfg))
    dq_cfg = cfg.dq
    if dq_cfg is not None:
        dq_cfg = tuning.pick_config("bwd_dq", spec, dq_cfg, options("bwd_dq", dq_cfg, dq_with_tiles, ("gluon",)),
                                    lambda c: launch_dq(*args, c))
    return backward_with(spec, dkdv, dq_cfg)


def preprocess(out, do, lse, delta, lse_s, dq_zero, p: AttnParams, cfg: BwdConfig):
    """bwd_preprocess: delta = rowsum(out * do) and lse / scale, zeroing dq_zero too (the one pass's
    buffer and its counter) unless it is None."""
    b, sq, _, hq, _, d = dims(out, out, p)
    acc = dq_zero if dq_zero is not None else placeholders(out.device)[1]
    bm = cfg.preprocess_block_m
    fast_path.launch(bwd_preprocess, (cdiv(sq, bm), hq, b), (
        out, do, delta, lse, lse_s, acc, strides(out, p.varlen), strides(do, p.varlen),
        lse_strides(lse, p.varlen), strides(acc, False) if dq_zero is not None else (0, 0, 0),
        acc.numel(), sq, d, p.scale, extras(out, p)[3]), dict(
        BLOCK_M=bm, BLOCK_D=kernel_flags(out, p, d)["BLOCK_D"], VARLEN=p.varlen, ZERO_DQ=dq_zero is not None))


def _common(q, k, v, do, p: AttnParams) -> tuple:
    return strides(q, p.varlen), strides(k, p.varlen), strides(v, p.varlen), strides(do, p.varlen)


def _tail(q, k, p: AttnParams) -> tuple:
    b, sq, sk, hq, hkv, d = dims(q, k, p)
    scal = scalars(p)
    return (sq, sk, hq // hkv, d, p.scale, softmax_args(scal), (p.window_left, p.window_right), scal["dropout_p"], sk)


def launch_dkdv(do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, p: AttnParams, dq_acc, cfg: DkdvConfig):
    """The dK/dV kernel into dk and dv (the one pass: dQ / scale into dq_acc too)."""
    b, sq, sk, hq, hkv, d = dims(q, k, p)
    slopes, slope_stride, rng, cu_q, cu_k = extras(q, p)
    if cfg.gluon:
        acc = dq_acc if cfg.one_pass else placeholders(q.device)[1]
        gluon_launch.dkdv(q, k, v, do, lse_s, delta, dk, dv, acc, cu_q, cu_k, p, cfg, dims(q, k, p), scalars(p))
        return
    fast_path.launch(bwd_dkdv_kernel, (cdiv(sk, cfg.block_n), hkv, b), (
        q, k, v, do, lse, delta, dk, dv, slopes, rng, cu_q, cu_k, *_common(q, k, v, do, p),
        strides(dk, p.varlen), strides(dv, p.varlen), lse_strides(lse, p.varlen),
        slope_stride, *_tail(q, k, p)), dict(
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, **kernel_flags(q, p, d),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages))


def launch_dq(do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, p: AttnParams, cfg: DqConfig):
    """The dQ kernel into dq."""
    b, sq, sk, hq, hkv, d = dims(q, k, p)
    slopes, slope_stride, rng, cu_q, cu_k = extras(q, p)
    if cfg.gluon:
        gluon_launch.dq(q, k, v, do, lse, delta, dq, cu_q, cu_k, p, cfg, dims(q, k, p), scalars(p))
        return
    fast_path.launch(bwd_dq_kernel, (cdiv(sq, cfg.block_m), hq, b), (
        q, k, v, do, lse, delta, dq, slopes, rng, cu_q, cu_k, *_common(q, k, v, do, p),
        strides(dq, p.varlen), lse_strides(lse, p.varlen), slope_stride, *_tail(q, k, p)), dict(
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, **kernel_flags(q, p, d), num_warps=cfg.num_warps,
        num_stages=cfg.num_stages))
