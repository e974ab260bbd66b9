"""Text from a trained bench/model.GPT, decoded two ways, for bench/nanogpt.py's report.

- with a KV cache: the prompt once, then one token a step through fa_ck.flash_attn_with_kvcache, each
  step's keys and values appended to the per-layer caches in place;
- without one: the whole prefix through the model (SDPA) for every new token, as GPT.generate does.

Both decode greedily (argmax), so they must pick the same tokens: in fp32 on the CPU exactly; in
bf16 on a GPU two near-equal logits may order differently late, and the report gives the first step
where the two part. Tokens/s: batch x new tokens over the wall time of the whole generation (prompt
included), after a short warm-up of each path.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Sizes:
    batch: int                # prompts decoded together
    prompt: int               # tokens of each prompt (from the validation split)
    new_tokens: int           # tokens generated after it


CPU_SIZES = Sizes(batch=2, prompt=8, new_tokens=16)
GPU_SIZES = Sizes(batch=8, prompt=64, new_tokens=448)


def load_fa_ck():
    """This checkout's fa_ck (python/), ahead of any installed one."""
    path = os.path.join(REPO, "python")
    if os.path.isdir(os.path.join(path, "fa_ck")) and path not in sys.path:
        sys.path.insert(0, path)
    import fa_ck
    return fa_ck


def sdpa_causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def fit(sizes: Sizes, block_size: int) -> Sizes:
    """sizes within the model's context: the prompt at most a quarter of it, the rest for new tokens."""
    prompt = max(1, min(sizes.prompt, block_size // 4))
    return Sizes(sizes.batch, prompt, max(1, min(sizes.new_tokens, block_size - prompt)))


def prompts(tokens: np.ndarray, sizes: Sizes, device) -> torch.Tensor:
    """(batch, prompt) token ids: windows spread evenly over tokens."""
    last = max(0, len(tokens) - sizes.prompt)
    starts = np.linspace(0, last, sizes.batch).astype(np.int64)
    rows = [np.asarray(tokens[s:s + sizes.prompt], dtype=np.int64) for s in starts]
    return torch.from_numpy(np.stack(rows)).to(device)


def new_caches(model, batch: int, capacity: int, dtype, device) -> list:
    """One dense (k_cache, v_cache) pair per layer, (batch, capacity, heads, head_dim), flash-attn's layout."""
    cfg = model.config
    shape = (batch, capacity, cfg.n_head, cfg.n_embd // cfg.n_head)
    return [(torch.empty(shape, dtype=dtype, device=device), torch.empty(shape, dtype=dtype, device=device))
            for _ in range(cfg.n_layer)]


def cached_step(model, fa_ck, idx, start: int, caches: list, lens: torch.Tensor):
    """Logits (B, vocab) after idx (B, T), the tokens at positions start.. of every row; their keys and
    values go into caches at lens (every row holds `start` tokens). The blocks' own modules, with the
    attention replaced by the cache call (eval: dropout is off)."""
    b, t = idx.shape
    tr = model.transformer
    x = tr.wte(idx) + tr.wpe(torch.arange(start, start + t, device=idx.device))
    for block, (k_cache, v_cache) in zip(tr.h, caches):
        attn = block.attn
        q, k, v = attn.c_attn(block.ln_1(x)).split(attn.n_embd, dim=2)
        heads = (b, t, attn.n_head, attn.n_embd // attn.n_head)
        y = fa_ck.flash_attn_with_kvcache(q.view(heads), k_cache, v_cache, k.view(heads), v.view(heads),
                                          cache_seqlens=lens, causal=True)
        x = x + attn.c_proj(y.reshape(b, t, attn.n_embd))
        x = x + block.mlp(block.ln_2(x))
    return model.lm_head(tr.ln_f(x[:, -1]))


@torch.no_grad()
def generate_cached(model, fa_ck, prompt, new_tokens: int, dtype, capacity: int = 0) -> torch.Tensor:
    """Greedy tokens (B, new_tokens) after prompt, with a KV cache of capacity keys (0: just enough)."""
    b, t = prompt.shape
    caches = new_caches(model, b, capacity or t + new_tokens, dtype, prompt.device)
    lens = torch.zeros(b, dtype=torch.int32, device=prompt.device)
    logits = cached_step(model, fa_ck, prompt, 0, caches, lens)
    out = []
    for i in range(new_tokens):
        lens += t if i == 0 else 1
        out.append(logits.argmax(-1, keepdim=True))
        if i + 1 < new_tokens:
            logits = cached_step(model, fa_ck, out[-1], t + i, caches, lens)
    return torch.cat(out, 1)


@torch.no_grad()
def generate_uncached(model, prompt, new_tokens: int) -> torch.Tensor:
    """Greedy tokens (B, new_tokens) after prompt, the whole prefix through the model each time."""
    idx = prompt
    for _ in range(new_tokens):
        logits, _ = model(idx)
        idx = torch.cat((idx, logits[:, -1].argmax(-1, keepdim=True)), 1)
    return idx[:, prompt.shape[1]:]


def timed(fn, device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return out, time.perf_counter() - t0


def first_divergence(a: torch.Tensor, b: torch.Tensor):
    """The first step (0-based) where any row's tokens differ, or None."""
    differ = (a != b).any(0).nonzero()
    return int(differ[0]) if len(differ) else None


def as_text(tokens, vocab_size: int):
    """Byte-level tokens as text (what the default corpus uses); None for other vocabularies."""
    if vocab_size > 256:
        return None
    return bytes(int(t) for t in tokens).decode("utf-8", errors="replace")


def sample_trained(trained, config, data, device, dtype, autocast, sizes: Sizes | None = None) -> dict:
    """The sampling section of the report: trained is (variant name, its state_dict) or None. Never
    raises: a failure is recorded with its reason."""
    if trained is None:
        return dict(status="skipped", reason="no variant finished training in this process")
    try:
        return sample(trained, config, data, device, dtype, autocast, sizes)
    except Exception as e:  # the training report stands without its sampling section
        return dict(status="failed", reason=f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}")


def sample(trained, config, data, device, dtype, autocast, sizes: Sizes | None) -> dict:
    from bench.model import GPT
    fa_ck = load_fa_ck()
    name, state = trained
    sizes = fit(sizes or (GPU_SIZES if device.type == "cuda" else CPU_SIZES), config.block_size)
    model = GPT(config, attention=sdpa_causal)
    model.load_state_dict(state)
    model.to(device).eval()
    prompt = prompts(data.val if len(data.val) > sizes.prompt else data.train, sizes, device)
    autocast = autocast or nullcontext()
    # our loop makes every length itself: the API's host reads that check them would only add syncs
    checks = os.environ.get("FA_CK_KVCACHE_CHECKS")
    os.environ["FA_CK_KVCACHE_CHECKS"] = "0"
    try:
        with autocast:
            # warm-up: the kernels compiled for the same cache capacity as the timed run
            generate_cached(model, fa_ck, prompt, 2, dtype, capacity=sizes.prompt + sizes.new_tokens)
            generate_uncached(model, prompt, 2)
            cached, cached_s = timed(lambda: generate_cached(model, fa_ck, prompt, sizes.new_tokens, dtype), device)
            plain, plain_s = timed(lambda: generate_uncached(model, prompt, sizes.new_tokens), device)
            served = served_by(model, fa_ck, prompt, dtype)
    finally:
        if checks is None:
            os.environ.pop("FA_CK_KVCACHE_CHECKS", None)
        else:
            os.environ["FA_CK_KVCACHE_CHECKS"] = checks
    tokens = sizes.batch * sizes.new_tokens
    diverge = first_divergence(cached, plain)
    return dict(status="ok", weights=name, **asdict(sizes), dtype=str(dtype).replace("torch.", ""),
                served_by=served, cached_tokens_per_s=tokens / cached_s, uncached_tokens_per_s=tokens / plain_s,
                speedup=plain_s / cached_s, cached_s=cached_s, uncached_s=plain_s,
                same_tokens=diverge is None, first_divergence=diverge,
                rows_identical=int((cached == plain).all(1).sum()),
                text=as_text(torch.cat((prompt[0], cached[0])).tolist(), config.vocab_size))


def served_by(model, fa_ck, prompt, dtype) -> str:
    """The backend fa_ck's dispatch picks for one decode step of this model."""
    cfg = model.config
    b, hd = prompt.shape[0], cfg.n_embd // cfg.n_head
    q = torch.zeros(b, 1, cfg.n_head, hd, dtype=dtype, device=prompt.device)
    k_cache, v_cache = new_caches(model, b, 2, dtype, prompt.device)[0]
    return fa_ck.explain_kvcache(q, k_cache, v_cache, q, q, cache_seqlens=1, causal=True).strip().splitlines()[-1] \
        .lstrip("-> ")


def summary_line(section: dict) -> str:
    """One line for stdout."""
    if section.get("status") != "ok":
        return f"sampling {section.get('status')}: {section.get('reason', '')}"
    agree = "the same tokens" if section["same_tokens"] else f"tokens part at step {section['first_divergence']}"
    return (f"sampling ({section['weights']}'s weights, {section['batch']} x {section['new_tokens']} tokens, "
            f"{section['dtype']}): KV cache ({section['served_by']}) {section['cached_tokens_per_s']:,.0f} tokens/s, "
            f"no cache (SDPA) {section['uncached_tokens_per_s']:,.0f} tokens/s, {section['speedup']:.2f}x; {agree}")


def markdown(section: dict | None) -> list:
    """The report's sampling section, as markdown lines (none without a section)."""
    if not section:
        return []
    lines = ["", "## Sampling: KV cache against no cache", ""]
    if section.get("status") != "ok":
        return lines + [f"{section.get('status')}: {section.get('reason', '')}"]
    agree = ("identical in every row" if section["same_tokens"] else
             f"first differ at step {section['first_divergence']} ({section['rows_identical']} of "
             f"{section['batch']} rows identical throughout)")
    lines += [f"Greedy decoding of {section['batch']} prompts of {section['prompt']} validation tokens, "
              f"{section['new_tokens']} new tokens each, {section['dtype']}, with {section['weights']}'s trained "
              "weights. KV cache: fa_ck.flash_attn_with_kvcache, appending each token's keys and values in place "
              f"(served by {section['served_by']}; FA_CK_KVCACHE_CHECKS=0). No cache: the whole prefix through "
              "the model with SDPA for every token. Both eager; tokens/s over the whole generation.", "",
              "| path | tokens/s | seconds |", "|---|---|---|",
              f"| KV cache | {section['cached_tokens_per_s']:,.0f} | {section['cached_s']:.2f} |",
              f"| no cache (SDPA) | {section['uncached_tokens_per_s']:,.0f} | {section['uncached_s']:.2f} |", "",
              f"Speed-up {section['speedup']:.2f}x. Tokens: {agree}."]
    if section.get("text"):
        lines += ["", "Row 0, prompt and continuation:", "", "```", section["text"].replace("```", "'''"), "```"]
    return lines
