"""Host time of one fwd+bwd at a tiny shape (B1 S128 H2 d64 causal, bf16), back to back: fa_ck as
users call it, against the floor of a Python autograd.Function that only allocates, fa_ck's
backend called from the main thread without autograd, Triton launch floors, and SDPA cuDNN.
    python bench/results/h200-20261201-sixteenth/autograd_probe.py    (repo root, PYTHONPATH=python)"""
import time

import torch
import triton
import triton.language as tl

import fa_ck
from fa_ck.backends import triton as tb
from fa_ck.backends.triton import launch as tlaunch
from fa_ck.params import AttnParams

N = 300
dev = "cuda"
q, k, v = (torch.randn(1, 128, 2, 64, dtype=torch.bfloat16, device=dev, requires_grad=True) for _ in range(3))
do = torch.randn_like(q)


def host_us(fn, n=N):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    return t


class Trivial(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v):
        out, lse = torch.empty_like(q), torch.empty((1, 2, 128), device=q.device)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.set_materialize_grads(False)
        return out, lse

    @staticmethod
    def backward(ctx, dout, dlse):
        q, k, v, out, lse = ctx.saved_tensors
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


class TrivialOnce(Trivial):
    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout, dlse):
        q, k, v, out, lse = ctx.saved_tensors
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


SPIN = []


class Spin(Trivial):
    """Times a fixed piece of Python on the autograd engine's thread."""
    @staticmethod
    def backward(ctx, dout, dlse):
        t0 = time.perf_counter()
        s = 0
        for i in range(2000):
            s += i
        SPIN.append(time.perf_counter() - t0)
        return dout, dout, dout


@triton.jit
def tiny_kernel(X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)


x = torch.zeros(1024, device=dev)
rows = {}
rows["fa_ck fwd+bwd (autograd.grad)"] = host_us(
    lambda: torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=True), (q, k, v), do))
rows["fa_ck fwd (no grad)"] = host_us(lambda: fa_ck.flash_attn_func(q.detach(), k.detach(), v.detach(), causal=True))
p = AttnParams(scale=64 ** -0.5, causal=True)
qd, kd, vd = q.detach(), k.detach(), v.detach()
o, lse = tb.forward(qd, kd, vd, p)
rows["backend forward, main thread"] = host_us(lambda: tb.forward(qd, kd, vd, p))
rows["backend backward, main thread"] = host_us(lambda: tb.backward(do, qd, kd, vd, o, lse, p))
rows["Trivial Function fwd+bwd (allocations only)"] = host_us(
    lambda: torch.autograd.grad(Trivial.apply(q, k, v)[0], (q, k, v), do))
rows["same, once_differentiable"] = host_us(
    lambda: torch.autograd.grad(TrivialOnce.apply(q, k, v)[0], (q, k, v), do))
rows["Trivial forward only (grad on)"] = host_us(lambda: Trivial.apply(q, k, v))
rows["torch.empty_like x1"] = host_us(lambda: torch.empty_like(q))
rows["torch.zeros x1 (q's numel + 4, fp32)"] = host_us(lambda: torch.zeros(q.numel() + 4, device=dev))
rows["tiny Triton kernel, kernel[grid]"] = host_us(lambda: tiny_kernel[(1,)](x, 1024, BLOCK=1024))
rows["tiny Triton kernel, fa_ck launch()"] = host_us(lambda: tlaunch.launch(tiny_kernel, (1,), (x, 1024), dict(BLOCK=1024)))
torch.autograd.grad(Spin.apply(q, k, v)[0], (q, k, v), do)
SPIN.clear()
for _ in range(50):
    torch.autograd.grad(Spin.apply(q, k, v)[0], (q, k, v), do)
engine = sorted(SPIN)[25] * 1e6
t0 = time.perf_counter()
for _ in range(50):
    s = 0
    for i in range(2000):
        s += i
main = (time.perf_counter() - t0) / 50 * 1e6
rows["2000-step Python loop on the engine thread"] = engine
rows["same loop on the main thread"] = main
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F
qt, kt, vt, dot = (t.transpose(1, 2) for t in (q, k, v, do))


def cudnn_both():
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
    torch.autograd.grad(out, (q, k, v), dot)


rows["cuDNN fwd+bwd"] = host_us(cudnn_both)
print("| what (B1 S128 H2 d64 causal bf16) | host us per call |\n|---|---|")
for name, us in rows.items():
    print(f"| {name} | {us:.1f} |")
