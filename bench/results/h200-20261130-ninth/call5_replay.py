"""Repeated calls replaying their recorded launches (triton backend _Plan, device call 5 of the
ninth part), on the GPU: (1) a replayed call gives what the slow path gives, on the same inputs
(forward bit for bit; gradients bit for bit with deterministic=True, else within the one-pass
dQ's reduce-add order); (2) host time per call with plans on and off (a tiny call, launches
queued without waiting); (3) fwd and fwd+bwd at B16 S1024 H16 d128 (causal and full) and the
nanoGPT shape with plans on / off alternately, SDPA cuDNN beside (triton do_bench medians).
    python bench/results/h200-20261130-ninth/call5_replay.py
Call 5 ran it at 71d7ff9 with one replay per case; call 8 (after replays went straight to the
compiled kernels from the second on) compares the second replay too.
"""
import importlib
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")
plans_on = tb._PLANS


class _NoPlans(dict):
    def __setitem__(self, key, value):   # nothing kept: every call takes the slow path
        pass


def use_plans(on: bool):
    tb._PLANS = plans_on if on else _NoPlans()
    plans_on.clear()


def fwd_bwd(q, k, v, g, **kw):
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = fa_ck.flash_attn_func(q, k, v, backend="triton", **kw)
    out.backward(g)
    return out.detach(), q.grad, k.grad, v.grad


print("(1) replay against the slow path, same inputs")
cases = [((2, 1000, 4, 4, 128), dict(causal=True)), ((2, 777, 4, 2, 96), dict()), ((1, 2048, 2, 2, 64), dict(window_size=(100, 0))),
         ((3, 300, 2, 2, 64), dict(causal=True)), ((2, 1000, 4, 4, 128), dict(causal=True, deterministic=True)),
         ((64, 1024, 12, 12, 64), dict(causal=True))]
for (b, s, hq, hkv, d), kw in cases:
    q = torch.randn(b, s, hq, d, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(b, s, hkv, d, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    g = torch.randn_like(q)
    use_plans(False)
    slow = fwd_bwd(q, k, v, g, **kw)
    use_plans(True)
    fwd_bwd(q, k, v, g, **kw)                     # records
    n_plans = len(tb._PLANS)
    for replay in (1, 2):                         # the first through launch(), the second run_compiled
        fast = fwd_bwd(q, k, v, g, **kw)
        diffs = [(a.float() - c.float()).abs().max().item() for a, c in zip(slow, fast)]
        scale = [a.float().abs().max().item() for a in slow]
        print(f"B{b} S{s} Hq{hq} Hkv{hkv} d{d} {kw}: plans {n_plans}; max |slow - replay {replay}| out "
              f"{diffs[0]:.1e}, dq {diffs[1]:.1e} (of {scale[1]:.1e}), dk {diffs[2]:.1e}, dv {diffs[3]:.1e}",
              flush=True)

print("(2) host time per call, us (B1 S128 H1 d64 causal, 400 calls queued, one sync)")
q, k, v = (torch.randn(1, 128, 1, 64, dtype=torch.bfloat16, device="cuda") for _ in range(3))
for on in (False, True, False, True):
    use_plans(on)
    with torch.no_grad():
        for _ in range(20):
            fa_ck.flash_attn_func(q, k, v, causal=True, backend="triton")
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(400):
            fa_ck.flash_attn_func(q, k, v, causal=True, backend="triton")
        host = (time.perf_counter() - t) / 400 * 1e6
        torch.cuda.synchronize()
    qg, kg, vg = (x.detach().requires_grad_() for x in (q, k, v))
    g = torch.randn_like(q)
    for _ in range(20):
        fa_ck.flash_attn_func(qg, kg, vg, causal=True, backend="triton").backward(g)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(200):
        fa_ck.flash_attn_func(qg, kg, vg, causal=True, backend="triton").backward(g)
    both = (time.perf_counter() - t) / 200 * 1e6
    torch.cuda.synchronize()
    print(f"plans {'on ' if on else 'off'}: forward {host:.0f} us, forward+backward {both:.0f} us", flush=True)

print("(3) | shape | mode | plans off ms | plans on ms | cuDNN ms |")
for b, s, h, d, causal in [(16, 1024, 16, 128, True), (16, 1024, 16, 128, False), (64, 1024, 12, 64, True)]:
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    g = torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda")

    def ours_fwd():
        with torch.no_grad():
            fa_ck.flash_attn_func(q, k, v, causal=causal, backend="triton")

    def ours_both():
        fa_ck.flash_attn_func(q, k, v, causal=causal, backend="triton").backward(g)

    def cudnn_fwd():
        with torch.no_grad(), sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal)

    def cudnn_both():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=causal).backward(g.transpose(1, 2))

    for mode, ours, cudnn in (("fwd", ours_fwd, cudnn_fwd), ("fwd+bwd", ours_both, cudnn_both)):
        times = {False: [], True: []}
        for _ in range(3):
            for on in (False, True):
                use_plans(on)
                ours()
                times[on].append(do_bench(ours, warmup=25, rep=100, return_mode="median"))
        t_cudnn = do_bench(cudnn, warmup=25, rep=100, return_mode="median")
        off, on = sorted(times[False])[1], sorted(times[True])[1]
        print(f"| B{b} S{s} H{h} d{d} {'causal' if causal else 'full'} | {mode} | {off:.3f} | {on:.3f} | {t_cudnn:.3f} |",
              flush=True)
