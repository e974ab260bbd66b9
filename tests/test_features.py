"""ALiBi, sliding window, softcap, dropout, varlen and deterministic backward, alone and
combined, forward and gradients against the float64 reference (interpreter on the CPU)."""
import pytest
import torch

import fa_ck
from fa_ck import reference
from attn_check import GRAD_TOL, FWD_TOL, alibi, assert_close, check, check_varlen, rand, tol
from conftest import DEVICE


@pytest.mark.parametrize("per_batch", [False, True])
@pytest.mark.parametrize("causal,sq,sk", [(False, 33, 33), (True, 40, 64), (True, 64, 40)])
def test_alibi(per_batch, causal, sq, sk):
    check(2, sq, sk, 4, 2, 32, causal=causal, alibi_slopes=alibi(2, 4, per_batch, DEVICE), device=DEVICE)


@pytest.mark.parametrize("window,causal", [((8, -1), False), ((-1, 5), False), ((10, 3), False),
                                           ((12, 0), True), ((0, 0), False), ((20, 7), True)])
@pytest.mark.parametrize("sq,sk", [(50, 50), (30, 70), (70, 30)])
def test_window(window, causal, sq, sk):
    check(1, sq, sk, 2, 1, 32, causal=causal, window_size=window, device=DEVICE)


@pytest.mark.parametrize("softcap", [1.0, 30.0])
def test_softcap(softcap):
    check(2, 45, 37, 4, 4, 40, softcap=softcap, softmax_scale=0.5, device=DEVICE)


def test_all_features_combined():
    check(2, 60, 90, 6, 2, 48, causal=True, window_size=(24, 0), softcap=5.0,
          alibi_slopes=alibi(2, 6, True, DEVICE), device=DEVICE)


def test_flash_attn_users_call_runs_unchanged():
    q, k, v = (rand(1, 300, 4, 64, dtype=torch.float32, device=DEVICE) for _ in range(3))
    s = alibi(1, 4, device=DEVICE)
    out = fa_ck.flash_attn_func(q, k, v, causal=True, window_size=(256, 0), alibi_slopes=s)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=True, window=(256, 0),
                                 alibi_slopes=s, dtype=torch.float64)
    assert_close("out", out, ref, FWD_TOL[torch.float32] if DEVICE == "cpu" else 5e-3)


# ------------------------------------------------------------------ varlen

def _varlen_case(lens_q, lens_k, hq, hkv, d, dtype=torch.float32, **feat):
    check_varlen(lens_q, lens_k, hq, hkv, d, dtype=dtype, device=DEVICE, **feat)


def test_varlen_basic():
    _varlen_case([5, 33, 17], [5, 33, 17], 2, 2, 32)


def test_varlen_gqa_causal_unequal_and_empty():
    _varlen_case([7, 0, 40, 1], [19, 3, 40, 0], 4, 2, 40, causal=True)


def test_varlen_all_features():
    _varlen_case([20, 45], [50, 30], 6, 3, 32, causal=True, window_size=(16, 0), softcap=3.0,
                 alibi_slopes=alibi(2, 6, True, DEVICE))


def test_varlen_bf16():
    _varlen_case([31, 18], [31, 40], 4, 1, 64, dtype=torch.bfloat16, causal=True)


# ------------------------------------------------------------------ dropout

def _dropout_run(p, b=2, sq=48, sk=40, hq=4, hkv=2, d=32, seed=1234, **feat):
    torch.manual_seed(seed)
    q, k, v = (rand(b, s, h, d, dtype=torch.float32, device=DEVICE) for s, h in ((sq, hq), (sk, hkv), (sk, hkv)))
    torch.manual_seed(seed + 1)
    out, lse, probs = fa_ck.flash_attn_func(q, k, v, dropout_p=p, return_attn_probs=True, **feat)
    return q, k, v, out, lse, probs


def test_dropout_statistics():
    p = 0.3
    *_, probs = _dropout_run(p, sq=128, sk=128)
    keep = probs >= 0
    rate = keep.float().mean().item()
    n = keep.numel()
    assert abs(rate - (1 - p)) < 5 * (p * (1 - p) / n) ** 0.5, f"keep rate {rate} for p={p}"
    # the mask is not one pattern repeated: heads and batches differ
    assert not torch.equal(keep[0, 0], keep[0, 1]) and not torch.equal(keep[0, 0], keep[1, 0])


def test_dropout_output_is_unbiased():
    # E[out] with dropout equals out without: averaged over many seeds, the mean approaches it.
    q, k, v, _, _, _ = _dropout_run(0.0, b=1, sq=16, sk=16, hq=1, hkv=1)
    clean = fa_ck.flash_attn_func(q, k, v)
    acc = torch.zeros_like(clean)
    n = 40
    for s in range(n):
        torch.manual_seed(100 + s)
        acc += fa_ck.flash_attn_func(q, k, v, dropout_p=0.25).detach()
    assert ((acc / n - clean).norm() / clean.norm()).item() < 0.2


@pytest.mark.parametrize("feat", [{}, {"causal": True}, {"softcap": 4.0, "window_size": (10, 5)}])
def test_dropout_matches_reference_with_same_mask(feat):
    p = 0.2
    q, k, v, out, lse, probs = _dropout_run(p, **feat)
    keep = probs >= 0
    # a masked-out (invisible) entry has probability 0 either way; only visible ones carry the sign
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref, ref_lse = reference.attention(q64, k64, v64, dropout_p=p, dropout_mask=keep, dtype=torch.float64,
                                       causal=feat.get("causal", False), window=feat.get("window_size", (-1, -1)),
                                       softcap=feat.get("softcap", 0.0))
    assert_close("out", out, ref, tol(FWD_TOL, torch.float32, DEVICE))
    assert_close("lse", lse, ref_lse, 10 * tol(FWD_TOL, torch.float32, DEVICE))
    # the backward regenerates the forward's mask: gradients match the reference with that mask
    do = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), do)
    refs = torch.autograd.grad(ref, (q64, k64, v64), do.double())
    for name, g, r in zip(("dq", "dk", "dv"), grads, refs):
        assert_close(name, g, r, tol(GRAD_TOL, torch.float32, DEVICE))


def _normalise_s_dmask(s_dmask, s, block_n):
    """What flash-attn's tests do with S_dmask (normalize_flash_attn_S), re-derived in float64: its kernel
    walks key blocks last to first, so block j holds exp(S - m_j), m_j the row max over blocks j, j+1, ..."""
    lse = torch.logsumexp(s, -1, keepdim=True)
    lse = lse.masked_fill(lse == float("-inf"), float("inf"))          # an empty row: exp(m - inf) = 0
    attn, m = torch.empty_like(s), torch.full_like(lse, float("-inf"))
    for j in reversed(range(0, s.shape[-1], block_n)):
        m = torch.maximum(m, s[..., j:j + block_n].amax(-1, keepdim=True))
        attn[..., j:j + block_n] = s_dmask[..., j:j + block_n].abs().double() * torch.exp(m - lse)
    return attn


@pytest.mark.parametrize("feat", [
    dict(d=64, dropout_p=0.17, causal=True),
    dict(d=64, dropout_p=0.17, window_size=torch.tensor([40, 10]), alibi=True),
    dict(d=40, softcap=5.0, sq=150, sk=70, causal=True),
    dict(d=16, dropout_p=0.3),
])
def test_s_dmask_is_what_flash_attn_returns(feat):
    """S_dmask as flash-attn 2.8's tests read it: normalised per key block it gives the softmax
    probabilities, and its sign gives the dropout mask that the output used."""
    feat = dict(feat)
    b, sq, sk, hq, hkv = 2, feat.pop("sq", 70), feat.pop("sk", 150), 4, 2
    d, p = feat.pop("d"), feat.get("dropout_p", 0.0)
    if feat.pop("alibi", False):
        feat["alibi_slopes"] = alibi(b, hq, True, DEVICE)
    q, k, v = (rand(b, s, h, d, dtype=torch.float32, device=DEVICE) for s, h in ((sq, hq), (sk, hkv), (sk, hkv)))
    out, lse, s_dmask = fa_ck.flash_attn_func(q, k, v, return_attn_probs=True, **feat)
    assert s_dmask.shape == (b, hq, sq, sk) and s_dmask.dtype == q.dtype
    window = tuple(int(w) for w in feat.get("window_size", (-1, -1)))
    kw = dict(causal=feat.get("causal", False), window=window, alibi_slopes=feat.get("alibi_slopes"),
              softcap=feat.get("softcap", 0.0))
    q64, k64, v64 = (t.detach().double() for t in (q, k, v))
    probs, _ = reference.probabilities(q64, k64, dtype=torch.float64, **kw)
    block_n = fa_ck.interface.s_dmask_block_n(q.device, d, p > 0, kw["causal"])
    attn = _normalise_s_dmask(s_dmask, reference.scores(q64, k64, dtype=torch.float64, **kw), block_n)
    assert_close("normalised S_dmask", attn, probs, 1e-6)
    keep = s_dmask >= 0
    assert keep.all() if p == 0 else abs(1 - keep[probs > 0].float().mean().item() - p) < 0.03
    ref, _ = reference.attention(q64, k64, v64, dropout_p=p, dropout_mask=keep, dtype=torch.float64, **kw)
    assert_close("out", out, ref, tol(FWD_TOL, torch.float32, DEVICE))


def test_varlen_s_dmask_is_what_flash_attn_returns():
    lens_q, lens_k, hq, d, p = [30, 0, 70], [90, 5, 150], 2, 64, 0.2
    cu_q, cu_k = (torch.tensor([0] + torch.tensor(n).cumsum(0).tolist(), dtype=torch.int32, device=DEVICE)
                  for n in (lens_q, lens_k))
    q, k, v = (rand(n, hq, d, dtype=torch.float32, device=DEVICE) for n in (sum(lens_q), sum(lens_k), sum(lens_k)))
    _, _, s_dmask = fa_ck.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), dropout_p=p,
                                                 causal=True, return_attn_probs=True)
    assert s_dmask.shape == (3, hq, max(lens_q), max(lens_k))
    block_n = fa_ck.interface.s_dmask_block_n(q.device, d, True, True)
    for i, (sq, sk) in enumerate(zip(lens_q, lens_k)):         # sequence i in the top-left corner
        qi = q[None, cu_q[i]:cu_q[i + 1]].detach().double()
        ki = k[None, cu_k[i]:cu_k[i + 1]].detach().double()
        probs, _ = reference.probabilities(qi, ki, causal=True, dtype=torch.float64)
        s = reference.scores(qi, ki, causal=True, dtype=torch.float64)
        assert_close(f"sequence {i}", _normalise_s_dmask(s_dmask[i:i + 1, :, :sq, :sk], s, block_n), probs, 1e-6)


def test_dropout_same_seed_same_bits():
    a = _dropout_run(0.4, seed=7)
    b = _dropout_run(0.4, seed=7)
    c = _dropout_run(0.4, seed=8)
    assert torch.equal(a[3], b[3]) and torch.equal(a[5] >= 0, b[5] >= 0)
    assert not torch.equal(a[5] >= 0, c[5] >= 0)


def test_dropout_varlen_matches_reference():
    # forward and gradients, GQA, an empty sequence and Sq != Sk, against the mask the kernel reports
    check_varlen([20, 35, 0, 9], [20, 35, 4, 13], 4, 2, 32, device=DEVICE, dropout_p=0.25, causal=True)


# ------------------------------------------------------------------ determinism

@pytest.mark.parametrize("feat", [{"causal": True}, {"dropout_p": 0.1}])
def test_deterministic_backward_is_bitwise_repeatable(feat):
    q, k, v = (rand(2, 40, h, 32, dtype=torch.float16, device=DEVICE) for h in (4, 2, 2))
    do = torch.randn(2, 40, 4, 32, dtype=torch.float16, device=DEVICE)
    runs = []
    for _ in range(2):
        torch.manual_seed(5)
        out = fa_ck.flash_attn_func(q, k, v, deterministic=True, **feat)
        runs.append(torch.autograd.grad(out, (q, k, v), do))
    for a, b in zip(*runs):
        assert torch.equal(a, b)


@pytest.mark.parametrize("d", [16, 64])
def test_varlen_backward_one_key_per_sequence_large_scores(d):
    """flash-attn's bwd_varlen_overflow: sequences of one key and scores of +-20, so keys past a
    sequence's end would overflow P if unmasked; dq, dk and dv must stay finite and right."""
    check_varlen([76, 34, 146], [1, 1, 1], 5, 5, d, dtype=torch.float16, device=DEVICE, softmax_scale=9 / d ** 0.5)
