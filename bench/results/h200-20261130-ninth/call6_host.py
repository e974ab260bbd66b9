"""Host time per call on the H200's host (device call 6 of the ninth part): a tiny causal call
(B1 S128 H1 d64, bf16), 400 calls queued and one sync, for fa_ck (plans on) and SDPA cuDNN /
flash; and fa_ck's fwd+bwd split by where the host time goes (perf_counter around the backend's
forward and backward and around out.backward()).
    python bench/results/h200-20261130-ninth/call6_host.py
"""
import importlib
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")
spent = {"backend forward": 0.0, "backend backward": 0.0}
for name, key in (("forward", "backend forward"), ("backward", "backend backward")):
    real = getattr(tb, name)

    def timed(*a, _real=real, _key=key, **kw):
        t = time.perf_counter()
        try:
            return _real(*a, **kw)
        finally:
            spent[_key] += time.perf_counter() - t
    setattr(tb, name, timed)

q, k, v = (torch.randn(1, 128, 1, 64, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
g = torch.randn_like(q)
qs, ks, vs, gs = (t.transpose(1, 2) for t in (q, k, v, g))
calls = {
    "fa_ck": (lambda: fa_ck.flash_attn_func(q, k, v, causal=True, backend="triton"), None),
    "sdpa-cudnn": (lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=True), SDPBackend.CUDNN_ATTENTION),
    "sdpa-flash": (lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=True), SDPBackend.FLASH_ATTENTION),
}
print("| call | forward us | forward+backward us | of which out.backward() us | backend fwd us | backend bwd us |")
print("|---|---|---|---|---|---|")
for rnd in range(2):
    for name, (fn, backend) in calls.items():
        ctx = sdpa_kernel(backend) if backend is not None else torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x)
        with ctx:
            gg = g if name == "fa_ck" else gs
            for _ in range(20):
                fn().backward(gg)
            torch.cuda.synchronize()
            with torch.no_grad():
                t = time.perf_counter()
                for _ in range(400):
                    fn()
                fwd = (time.perf_counter() - t) / 400 * 1e6
            torch.cuda.synchronize()
            for key in spent:
                spent[key] = 0.0
            bwd_only = 0.0
            t = time.perf_counter()
            for _ in range(200):
                out = fn()
                t1 = time.perf_counter()
                out.backward(gg)
                bwd_only += time.perf_counter() - t1
            both = (time.perf_counter() - t) / 200 * 1e6
            torch.cuda.synchronize()
        print(f"| {name} (round {rnd + 1}) | {fwd:.0f} | {both:.0f} | {bwd_only / 200 * 1e6:.0f} | "
              f"{spent['backend forward'] / 200 * 1e6:.0f} | {spent['backend backward'] / 200 * 1e6:.0f} |", flush=True)
