"""Attention's share of a training step: the variant's attention, forward and backward, timed alone
at the step's shapes, times the calls one step makes, over the step's median time.

Timed alone, attention neither overlaps nor competes with the rest of the step, so the share is an
estimate of what attention costs, not a trace of the step. On a GPU the time comes from CUDA events
around the calls; on the CPU from the wall clock.
"""
from __future__ import annotations

import statistics
import time

import torch


def qkv_like_the_model(batch, n_head, seq_len, head_dim, device, dtype, generator=None):
    """q, k, v as CausalSelfAttention hands them over: (B, H, T, D) views of one (B, T, 3C) tensor."""
    width = n_head * head_dim
    qkv = torch.randn((batch, seq_len, 3 * width), generator=generator, dtype=torch.float32)
    qkv = qkv.to(device=device, dtype=dtype).requires_grad_()
    return tuple(t.view(batch, seq_len, n_head, head_dim).transpose(1, 2) for t in qkv.split(width, dim=2))


def time_call_ms(attention, q, k, v, *, warmup=2, iters=5):
    """Median milliseconds of one forward and backward of attention(q, k, v)."""
    grad = torch.randn_like(q)

    def call():
        out = attention(q, k, v)
        torch.autograd.grad(out, (q, k, v), grad)

    for _ in range(warmup):
        call()
    samples = []
    if q.device.type == "cuda":
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
    else:
        for _ in range(iters):
            started = time.perf_counter()
            call()
            samples.append((time.perf_counter() - started) * 1e3)
    return statistics.median(samples)


def attention_ms_per_step(attention, *, micro_batch, n_head, seq_len, head_dim, n_layer, grad_accum, device,
                          dtype, warmup=2, iters=5):
    """Milliseconds a training step spends in attention: one forward and backward per layer and
    micro-batch, each timed alone at the micro-batch's shapes."""
    q, k, v = qkv_like_the_model(micro_batch, n_head, seq_len, head_dim, device, dtype,
                                 generator=torch.Generator().manual_seed(0))
    return time_call_ms(attention, q, k, v, warmup=warmup, iters=iters) * n_layer * grad_accum
