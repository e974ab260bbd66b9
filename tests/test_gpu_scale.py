"""GPU-only checks at sizes the interpreter cannot reach: features at larger shapes, varlen with
64 random-length sequences (32k tokens), tensors past 2^31 elements, and framework integration
(autocast, no_grad / inference_mode, CUDA graph capture). All compare with the float64 reference."""
import pytest
import torch

import fa_ck
from fa_ck import reference
from attn_check import FWD_TOL, GRAD_TOL, alibi, assert_close, check, rand
from conftest import GPU

pytestmark = [pytest.mark.gpu, pytest.mark.bigmem, pytest.mark.skipif(not GPU, reason="needs a GPU")]
DEV = "cuda"


@pytest.mark.parametrize("feat", [
    dict(causal=True, window_size=(512, 0)),
    dict(alibi=True, causal=True),
    dict(softcap=30.0),
    dict(causal=True, window_size=(300, 64), softcap=10.0, alibi=True),
])
def test_features_large(feat):
    feat = dict(feat)
    if feat.pop("alibi", False):
        feat["alibi_slopes"] = alibi(2, 8, True, DEV)
    check(2, 2048, 2048, 8, 2, 128, dtype=torch.bfloat16, device=DEV, **feat)


def test_varlen_64_sequences_32k_tokens():
    gen = torch.Generator().manual_seed(0)
    cuts = torch.randperm(32768 - 1, generator=gen)[:63].add(1).sort().values
    bounds = torch.cat([torch.tensor([0]), cuts, torch.tensor([32768])])
    lens = (bounds[1:] - bounds[:-1]).tolist()
    cu = bounds.to(torch.int32).to(DEV)
    q = rand(32768, 8, 128, dtype=torch.bfloat16, device=DEV)
    k, v = (rand(32768, 2, 128, dtype=torch.bfloat16, device=DEV) for _ in range(2))
    out = fa_ck.flash_attn_varlen_func(q, k, v, cu, cu, max(lens), max(lens), causal=True)
    do = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), do)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref, _ = reference.attention_varlen(q64, k64, v64, cu, cu, causal=True, dtype=torch.float64)
    assert_close("out", out, ref, FWD_TOL[torch.bfloat16])
    refs = torch.autograd.grad(ref, (q64, k64, v64), do.double())
    for name, g, r in zip(("dq", "dk", "dv"), grads, refs):
        assert_close(name, g, r, GRAD_TOL[torch.bfloat16])


def test_past_2_31_elements():
    # q has 2^31 + 2^16 elements: addresses of its last rows overflow 32-bit offsets.
    sq, h, d, sk = (1 << 21) + 64, 8, 128, 256
    q = torch.randn(1, sq, h, d, dtype=torch.bfloat16, device=DEV)
    k, v = (torch.randn(1, sk, h, d, dtype=torch.bfloat16, device=DEV) for _ in range(2))
    assert q.numel() > 2 ** 31
    q.requires_grad_()
    out = fa_ck.flash_attn_func(q, k, v)
    tail = slice(sq - 200, sq)                               # rows past the 2^31 element mark
    ref, _ = reference.attention(q[:, tail].detach().double(), k.double(), v.double(), dtype=torch.float64)
    assert_close("out tail", out[:, tail], ref, FWD_TOL[torch.bfloat16])
    (dq,) = torch.autograd.grad(out, (q,), torch.ones_like(out))
    assert torch.isfinite(dq[:, tail]).all() and dq[:, tail].abs().sum() > 0


def test_autocast_and_inference_modes():
    q, k, v = (torch.randn(2, 4, 256, 64, device=DEV) for _ in range(3))
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = fa_ck.attention(q, k, v, causal=True)          # float32 in: runs in bf16, like SDPA
    assert out.dtype == torch.bfloat16
    assert_close("autocast", out, fa_ck.attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), causal=True), 0)
    with torch.no_grad():
        a = fa_ck.attention(q, k, v, causal=True)
    with torch.inference_mode():
        b = fa_ck.attention(q, k, v, causal=True)
    assert torch.equal(a, b)


@pytest.mark.parametrize("d", [64, 128])        # d128: TMA descriptors, their scratch allocated in the capture
def test_cuda_graph_capture_forward_and_backward(d):
    q, k, v = (torch.randn(2, 512, 4, d, device=DEV, dtype=torch.float16, requires_grad=True) for _ in range(3))
    do = torch.randn(2, 512, 4, d, device=DEV, dtype=torch.float16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):                       # warm up (compiles) outside the capture
        for _ in range(2):
            out = fa_ck.flash_attn_func(q, k, v, causal=True)
            grads = torch.autograd.grad(out, (q, k, v), do)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fa_ck.flash_attn_func(q, k, v, causal=True)
        grads = torch.autograd.grad(out, (q, k, v), do)
    with torch.no_grad():
        for t in (q, k, v):
            t.copy_(torch.randn_like(t))
    graph.replay()
    torch.cuda.synchronize()
    ref = fa_ck.flash_attn_func(q, k, v, causal=True)
    ref_grads = torch.autograd.grad(ref, (q, k, v), do)
    assert torch.equal(out, ref)
    for g, r in zip(grads, ref_grads):
        assert torch.equal(g, r)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_gpu_that_is_not_current():
    # Triton launches on the current device; the backend switches to the tensors' for the call
    torch.cuda.set_device(0)
    q, k, v = (rand(2, 300, 4, 128, dtype=torch.bfloat16, device="cuda:1") for _ in range(3))
    out = fa_ck.flash_attn_func(q, k, v, causal=True)
    grads = torch.autograd.grad(out, (q, k, v), torch.ones_like(out))
    assert out.device == q.device and all(g.device == q.device for g in grads)
    ref, _ = reference.attention(*(t.detach().double() for t in (q, k, v)), causal=True, dtype=torch.float64)
    assert_close("out", out, ref, FWD_TOL[torch.bfloat16])
    assert torch.cuda.current_device() == 0
