"""The calls whose launches tools/triton_compile_check.py compiles: representative public-API calls
(CALLS, FP8_CALLS) and KV-cache decoding calls into the triton backend (DECODE_CALLS), and run_call,
which makes one on CPU tensors (the compile check fakes the device around it).
"""
from __future__ import annotations

import dataclasses
import importlib

import torch

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")       # (fa_ck.backends is the function)
device = importlib.import_module("fa_ck.backends.triton.device")


@dataclasses.dataclass(frozen=True)
class Call:
    """One public-API call: flash_attn_func (flash_attn_varlen_func with `lens`, flash_attn_fp8_func
    with fp8 "quantised": 16-bit inputs fa_ck quantises, or "inputs": the device's fp8), and its backward."""
    d: int
    dtype: torch.dtype = torch.bfloat16
    causal: bool = False
    b: int = 2
    s: int = 1024
    hq: int = 4
    hkv: int = 4
    lens: tuple = ()
    softcap: float = 0.0
    alibi: bool = False
    dropout_p: float = 0.0
    window: tuple = (-1, -1)
    deterministic: bool = False
    fp8: str = ""

    @property
    def label(self) -> str:
        shape = f"lens {'/'.join(map(str, self.lens))}" if self.lens else f"B{self.b} S{self.s}"
        feats = [name for name, on in (("softcap", self.softcap), ("alibi", self.alibi), ("dropout", self.dropout_p),
                                       ("window", self.window != (-1, -1)), ("deterministic", self.deterministic),
                                       (f"fp8 {self.fp8}", self.fp8)) if on]
        return " ".join([str(self.dtype).split(".")[-1], f"d{self.d}", "causal" if self.causal else "full", shape,
                         f"H{self.hq}/{self.hkv}", *feats])


FP16, FP32 = torch.float16, torch.float32
# bf16 unless named: head dims 64, 128 and 256 full and causal, 96, 160 and 192 (not powers of two), GQA,
# varlen, deterministic, the lengths where the Gluon kernels' configs change (short causal blocks,
# 192-query tiles, persistent and dynamic schedules), and what forward.py / backward.py serve on sm90
# too (softcap with a window, ALiBi, dropout, fp32)
CALLS = [
    Call(64), Call(64, causal=True, s=512), Call(64, s=4096, hq=5, hkv=5),
    Call(128, FP16), Call(128, causal=True), Call(128, causal=True, s=4096),
    Call(128, causal=True, hq=8, hkv=2), Call(128, causal=True, deterministic=True),
    Call(256), Call(256, FP16, causal=True), Call(96, causal=True), Call(160), Call(192),
    Call(128, causal=True, lens=(300, 1024, 17)), Call(64, lens=(300, 1024, 17), hq=4, hkv=2),
    Call(64, FP16, softcap=30.0, window=(256, 0)), Call(128, alibi=True, causal=True), Call(64, dropout_p=0.1),
    Call(64, FP32, causal=True), Call(128, FP32),
]
# fp8: 16-bit inputs fa_ck quantises (d64 / d128, full and causal), and the device's fp8 inputs
FP8_CALLS = [Call(d, causal=causal, fp8="quantised") for d in (64, 128) for causal in (False, True)] + [
    Call(128, causal=True, fp8="inputs")]


@dataclasses.dataclass(frozen=True)
class DecodeCall:
    """One KV-cache decoding call into the triton backend: with `append` ("new": one new token, "rotary":
    rotated too) its kvcache_append first, then kvcache_forward: q (b, sq, hq, d) against caches of
    `cache` keys per row, dense or in pages of `page` (the tensors are never written or read)."""
    d: int = 128
    dtype: torch.dtype = torch.bfloat16
    b: int = 1
    sq: int = 1
    hq: int = 32
    hkv: int = 8
    cache: int = 32768
    page: int = 0
    causal: bool = False
    window: tuple = (-1, -1)
    softcap: float = 0.0
    alibi: bool = False
    leftpad: bool = False
    append: str = ""
    fp8: str = ""

    @property
    def label(self) -> str:
        feats = [name for name, on in (("causal", self.causal), ("window", self.window != (-1, -1)), ("softcap",
                                       self.softcap), ("alibi", self.alibi), ("leftpad", self.leftpad)) if on]
        feats += [f"append {self.append}"] if self.append else []
        return " ".join(["decode", str(self.dtype).split(".")[-1], f"d{self.d}", f"B{self.b} Sq{self.sq}",
                         f"H{self.hq}/{self.hkv}", f"cache {self.cache}", f"page {self.page}" if self.page else "dense",
                         *feats])

    def run(self) -> None:
        from fa_ck.params import KVCacheParams
        q = torch.randn(self.b, self.sq, self.hq, self.d, dtype=self.dtype)
        shape = (8, self.page, self.hkv, self.d) if self.page else (self.b, self.cache, self.hkv, self.d)
        k_cache, v_cache = torch.empty(shape, dtype=self.dtype), torch.empty(shape, dtype=self.dtype)
        ints = torch.zeros(self.b, dtype=torch.int32)
        table = torch.zeros(self.b, self.cache // max(self.page, 1), dtype=torch.int32)
        left, right = self.window
        p = KVCacheParams(scale=self.d ** -0.5, seqlens_k=ints + self.cache, causal=self.causal, window_left=left,
                          window_right=0 if self.causal else right, softcap=self.softcap,
                          alibi_slopes=torch.rand(self.hq) if self.alibi else None,
                          leftpad=ints if self.leftpad else None,
                          block_table=table if self.page else None)
        if self.append:
            k, v = (torch.randn(self.b, 1, self.hkv, self.d, dtype=self.dtype) for _ in range(2))
            cos = torch.rand(self.cache, self.d // 2) if self.append == "rotary" else None
            q = tb.kvcache_append(q, k_cache, v_cache, k, v, ints, cos, cos, False, False, p)
        tb.kvcache_forward(q, k_cache, v_cache, p)


# bf16 d128 H32/8 unless named: B1 with many splits and B64 with one, dense and paged (pages of 16 gathered key by
# key, of 256 read whole), MQA at fp16 d64, d256, a head dim that is no power of two, the masks and features, and
# the fused append (rotary into a dense cache, plain into pages)
DECODE_CALLS = [
    DecodeCall(append="rotary"), DecodeCall(b=64, cache=2048), DecodeCall(page=16, append="new"),
    DecodeCall(b=64, cache=8192, page=256),
    DecodeCall(64, torch.float16, sq=4, hq=32, hkv=1, page=64, causal=True), DecodeCall(256, cache=8192),
    DecodeCall(96, sq=4, cache=4096, window=(512, 0), softcap=30.0, alibi=True, leftpad=True),
    DecodeCall(64, torch.float16, sq=4, hq=8, hkv=8, cache=4096, window=(256, 0)),
]


def run_call(call: Call) -> None:
    """The call through fa_ck's public API (on a faked device), then its backward unless fp8."""
    torch.manual_seed(0)
    if isinstance(call, DecodeCall):
        call.run()
        return
    kw = dict(causal=call.causal, backend="triton")
    if call.fp8:
        q, k, v = (torch.randn(call.b, call.s, h, call.d, dtype=call.dtype) for h in (call.hq, call.hkv, call.hkv))
        if call.fp8 == "inputs":
            q, k, v = (t.to(device.fp8_dtype(t.device)) for t in (q, k, v))
        fa_ck.flash_attn_fp8_func(q, k, v, **kw)
        return
    kw.update(softcap=call.softcap, dropout_p=call.dropout_p, window_size=call.window, deterministic=call.deterministic)
    if call.alibi:
        kw["alibi_slopes"] = torch.rand(call.hq) * 0.3
    if call.lens:
        cu = torch.tensor([0, *torch.tensor(call.lens).cumsum(0).tolist()], dtype=torch.int32)
        q, k, v = (torch.randn(sum(call.lens), h, call.d, dtype=call.dtype, requires_grad=True)
                   for h in (call.hq, call.hkv, call.hkv))
        out = fa_ck.flash_attn_varlen_func(q, k, v, cu, cu, max(call.lens), max(call.lens), **kw)
    else:
        q, k, v = (torch.randn(call.b, call.s, h, call.d, dtype=call.dtype, requires_grad=True)
                   for h in (call.hq, call.hkv, call.hkv))
        out = fa_ck.flash_attn_func(q, k, v, **kw)
    out.backward(torch.ones_like(out))
