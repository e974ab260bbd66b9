"""Randomised testing: hypothesis draws shapes and features, the kernels must match the
float64 reference. A fixed example budget and derandomised search keep CI repeatable."""
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attn_check import alibi, check
from conftest import DEVICE


@st.composite
def calls(draw):
    group = draw(st.sampled_from([1, 2, 3]))
    hkv = draw(st.integers(1, 2))
    left = draw(st.sampled_from([-1, 0, 5, 17]))
    right = draw(st.sampled_from([-1, 0, 3]))
    feat = dict(causal=draw(st.booleans()), window_size=(left, right),
                softcap=draw(st.sampled_from([0.0, 0.0, 2.5])),
                softmax_scale=draw(st.sampled_from([None, 0.05, 1.3])))
    b = draw(st.integers(1, 2))
    if draw(st.booleans()):
        feat["alibi_slopes"] = alibi(b, hkv * group, draw(st.booleans()), DEVICE)
    return dict(b=b, sq=draw(st.integers(1, 70)), sk=draw(st.integers(1, 70)), hq=hkv * group, hkv=hkv,
                d=draw(st.sampled_from([8, 16, 24, 40, 64])),
                dtype=draw(st.sampled_from([torch.float32, torch.float32, torch.float16])), feat=feat)


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(calls())
def test_matches_reference(call):
    check(call["b"], call["sq"], call["sk"], call["hq"], call["hkv"], call["d"], dtype=call["dtype"],
          device=DEVICE, **call["feat"])
