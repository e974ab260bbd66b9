"""A GPT language model in the shape of nanoGPT's, in one readable file.

The model is GPT-2: token + position embeddings, a stack of pre-LayerNorm transformer
blocks (causal self-attention, then a 4x MLP with GELU), a final LayerNorm and a language
model head that shares its weights with the token embedding.

The one thing that differs from nanoGPT: the attention kernel is not chosen inside the
model. `GPT(config, attention=fn)` takes a function `fn(q, k, v) -> y` on tensors in
SDPA's layout (batch, heads, seq, head_dim) that must compute causal softmax(q k^T / sqrt(d)) v.
The benchmark swaps that function and nothing else, so every variant trains the very same
network from the very same weights.
"""

import inspect
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    block_size: int = 1024      # longest sequence the position embedding covers
    vocab_size: int = 50304     # GPT-2's 50257 tokens padded up to a multiple of 64 for speed
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0        # 0 for pretraining, as in nanoGPT; >0 makes runs less comparable
    bias: bool = True           # biases in Linear and LayerNorm, like GPT-2


# Named model shapes. vocab_size None means "take it from the data" (256 for byte-level text),
# so the tiny model does not spend most of its parameters on an unused GPT-2 vocabulary.
PRESETS = {
    "tiny": dict(n_layer=4, n_head=4, n_embd=128, block_size=256, vocab_size=None),
    "gpt2": dict(n_layer=12, n_head=12, n_embd=768, block_size=1024, vocab_size=50304),
    # GPT-2 124M at a long context, where attention dominates the step (--block 16384 for the longer)
    "gpt2-long": dict(n_layer=12, n_head=12, n_embd=768, block_size=8192, vocab_size=50304),
    "gpt2-medium": dict(n_layer=24, n_head=16, n_embd=1024, block_size=1024, vocab_size=50304),
    "gpt2-large": dict(n_layer=36, n_head=20, n_embd=1280, block_size=1024, vocab_size=50304),
}


def naive_causal_attention(q, k, v):
    """softmax(q k^T / sqrt(d)) v with the causal mask written out: the (T, T) score
    matrix is materialised, as in nanoGPT's non-flash path. Also the model's default."""
    seq_len = q.size(-2)
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    future = torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    probs = F.softmax(scores, dim=-1)
    return probs.to(v.dtype) @ v


class CausalSelfAttention(nn.Module):

    def __init__(self, config, attention):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        # q, k and v projections for all heads in one matmul
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        # A plain attribute, not a submodule: attention kernels carry no weights, and the
        # state_dict must be identical whichever kernel is plugged in.
        self.attention = attention

    def forward(self, x):
        batch, seq_len, width = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        # (B, T, C) -> (B, nh, T, hs): the layout SDPA and fa_ck.attention take
        q = q.view(batch, seq_len, self.n_head, width // self.n_head).transpose(1, 2)
        k = k.view(batch, seq_len, self.n_head, width // self.n_head).transpose(1, 2)
        v = v.view(batch, seq_len, self.n_head, width // self.n_head).transpose(1, 2)
        y = self.attention(q, k, v)
        y = y.transpose(1, 2).contiguous().view(batch, seq_len, width)  # re-assemble the heads
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):

    def __init__(self, config, attention):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config, attention)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):

    def __init__(self, config, attention=naive_causal_attention):
        super().__init__()
        assert config.vocab_size is not None and config.block_size is not None
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config, attention) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # Weight tying (GPT-2): the output projection is the token embedding.
        self.transformer.wte.weight = self.lm_head.weight

        self.apply(self._init_weights)
        # GPT-2's scaled init: each residual branch's output projection is shrunk by
        # 1/sqrt(2 * n_layer) so the residual stream's variance does not grow with depth.
        for name, param in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(param, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def set_attention(self, attention):
        """Plug a different attention kernel into every block (weights untouched)."""
        for block in self.transformer.h:
            block.attn.attention = attention

    def num_params(self, non_embedding=True):
        """Parameter count. The position embedding is left out by default, as nanoGPT
        does; the token embedding stays in because it is also the output layer."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.transformer.wpe.weight.numel()
        return n

    def forward(self, idx, targets=None):
        batch, seq_len = idx.size()
        assert seq_len <= self.config.block_size, \
            f"sequence of {seq_len} tokens is longer than block_size {self.config.block_size}"
        pos = torch.arange(seq_len, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is None:
            # generation only needs the last position's logits
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        # under bf16 autocast, cross_entropy runs in float32 (autocast's policy for it)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        # Decay the matrices (Linear weights, embeddings) but not biases and LayerNorm gains.
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        # The fused CUDA AdamW is one kernel launch for all parameters instead of several per tensor.
        use_fused = device_type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters
        extra = dict(fused=True) if use_fused else dict()
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **extra)

    def flops_per_token(self, seq_len):
        """Training FLOPs per token, PaLM appendix B as used by nanoGPT: 6N for the
        weights' forward and backward, plus 12 * L * H * Q * T for attention (counted
        as full, not causal, attention, like nanoGPT, so numbers compare with its MFU)."""
        cfg = self.config
        head_dim = cfg.n_embd // cfg.n_head
        return 6 * self.num_params() + 12 * cfg.n_layer * cfg.n_head * head_dim * seq_len

    def estimate_mfu(self, tokens_per_second, seq_len, peak_flops):
        """Model FLOPs utilisation: achieved training FLOP/s over the device's peak.
        None when the peak is not known."""
        if not peak_flops:
            return None
        return self.flops_per_token(seq_len) * tokens_per_second / peak_flops

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        """Sample max_new_tokens tokens after the prompt idx of shape (B, T)."""
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
                logits[logits < kth] = -float("inf")
            idx_next = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def config_from_preset(preset, vocab_size=None, block_size=None):
    """GPTConfig for a named preset. vocab_size fills in a preset that leaves it open
    (tiny); block_size overrides the preset's when given."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
    fields = dict(PRESETS[preset])
    if fields["vocab_size"] is None:
        # pad to a multiple of 64 like nanoGPT does with GPT-2's 50257
        fields["vocab_size"] = ((vocab_size or 50304) + 63) // 64 * 64
    elif vocab_size is not None and vocab_size > fields["vocab_size"]:
        raise ValueError(f"data has {vocab_size} token ids, more than preset {preset!r}'s "
                         f"vocab_size {fields['vocab_size']}")
    if block_size is not None:
        fields["block_size"] = block_size
    return GPTConfig(**fields)


def config_dict(config):
    return asdict(config)
