"""Where a replayed forward's host time goes on the GPU machine: cProfile over 1000 calls of a tiny
shape (B1 S128 H2 d128 causal, host-bound), fa_ck's fp8 forward of bf16 inputs and its bf16
forward, after warm-up; the 25 functions with the most own time each, and the cumulative time of
the layers (interface, ops, backend, quantisation buffers, plan replay). Writes $OUT/host_profile.txt.
    python3 bench/results/h200-20261203-no-q8/host_profile.py"""
import cProfile, io, os, pstats
import torch
import fa_ck

q, k, v = (torch.randn(1, 128, 2, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
calls = {"fp8": lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=True),
         "bf16": lambda: fa_ck.flash_attn_func(q, k, v, causal=True)}
out = io.StringIO()
for name, fn in calls.items():
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(1000):
        fn()
    torch.cuda.synchronize()
    pr.disable()
    st = pstats.Stats(pr, stream=out)
    out.write(f"\n===== {name}: 1000 calls =====\n")
    st.sort_stats("tottime").print_stats(25)
    st.sort_stats("cumulative").print_stats(r"interface|ops\.py|triton/__init__|fp8_buffers|replay|custom_op|autograd", 30)
text = out.getvalue()
open(os.path.join(os.environ.get("OUT", "."), "host_profile.txt"), "w").write(text)
print(text[-12000:])
