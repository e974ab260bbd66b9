"""The Gluon dK/dV kernel before and after its tile function (device call 4 of the ninth part),
timed in the same run: fwd+bwd through fa_ck with the dK/dV launches sent to the kernel of
15c2c33 or of this tree, alternately, 3 rounds each (triton do_bench medians), SDPA cuDNN beside.
Ran at cd550c0 (the tile-function kernel, reverted after this call in 2d812fd), with the old
kernel beside it (carried to the device, never committed):
    git checkout cd550c0
    git show 15c2c33:python/fa_ck/backends/triton/backward_gluon.py > python/fa_ck/backends/triton/backward_gluon_before.py
    python bench/results/h200-20261130-ninth/call4_dkdv_ab.py
"""
import importlib

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")
before = importlib.import_module("fa_ck.backends.triton.backward_gluon_before")
use_before = [False]
real_launch = tb.launch


def launch(kernel, grid, args, constexprs):
    if kernel is tb.bwd_dkdv_gluon_kernel and use_before[0]:
        # the old kernel has no batch, num_heads (args -7, -6) or PERSISTENT
        assert not constexprs["PERSISTENT"]
        args = args[:-7] + args[-5:]
        constexprs = {k: v for k, v in constexprs.items() if k != "PERSISTENT"}
        kernel = before.bwd_dkdv_gluon_kernel
    return real_launch(kernel, grid, args, constexprs)


tb.launch = launch
print("| shape | before ms | after ms | after / before | cuDNN ms | max |dgrad| diff |")
print("|---|---|---|---|---|---|")
for b, s, h, d, causal in [(64, 1024, 12, 64, True), (16, 1024, 32, 64, True), (4, 4096, 32, 64, True),
                           (16, 1024, 16, 128, False), (4, 4096, 16, 128, True), (1, 16384, 16, 128, False)]:
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    g = torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda")

    def ours():
        q.grad = k.grad = v.grad = None
        fa_ck.flash_attn_func(q, k, v, causal=causal, backend="triton").backward(g)

    def cudnn():
        q.grad = k.grad = v.grad = None
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=causal).backward(g.transpose(1, 2))

    grads = []
    for flag in (True, False):
        use_before[0] = flag
        ours()
        grads.append([t.grad.float() for t in (q, k, v)])
    diff = max((a - c).abs().max().item() for a, c in zip(*grads))
    times = {True: [], False: []}
    for _ in range(3):
        for flag in (True, False):
            use_before[0] = flag
            times[flag].append(do_bench(ours, warmup=25, rep=100, return_mode="median"))
    t_cudnn = do_bench(cudnn, warmup=25, rep=100, return_mode="median")
    old, new = sorted(times[True])[1], sorted(times[False])[1]
    print(f"| B{b} S{s} H{h} d{d} {'causal' if causal else 'full'} | {old:.3f} | {new:.3f} | {new / old:.3f} | "
          f"{t_cudnn:.3f} | {diff:.2e} |", flush=True)
