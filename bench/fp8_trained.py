"""fp8 attention's error on a trained model's q, k and v, beside its error on N(0, 1) inputs.

On N(0, 1) inputs the fp8 forward is ~5 % off float64 (e4m3's own rounding).
A trained model's heads are not N(0, 1): their logits spread wider or narrower, and some channels
of q and k carry outliers. This trains nanoGPT (bench/model.py, sdpa attention, bf16 autocast) for
--steps steps, takes every layer's q, k and v on one validation batch, and reports per layer the
relative error ||out - ref|| / ||ref|| against float64 of fa_ck's fp8 forward, of fa_ck's bf16
forward and of SDPA's (cuDNN on an H100/H200), with what shapes the error: the spread of the
scaled logits, and how far q's and k's largest channel stands above their typical one.

    python bench/fp8_trained.py [--steps 600] [--batch 64] [--capture 16] [--out DIR]

Writes results.md and results.json to --out (default ./fa_ck-results/fp8_trained-<gpu or cpu>-<date>/).

With no GPU it trains the tiny preset a few steps and runs fa_ck's kernels in Triton's
interpreter (a smoke run, not a measurement).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import types

import torch
import torch.nn.functional as F

ON_GPU = torch.cuda.is_available()
if not ON_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")    # before fa_ck's import: the kernels on the CPU
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

import fa_ck  # noqa: E402
from fa_ck import reference  # noqa: E402
from bench.data import BatchSampler, stdlib_corpus  # noqa: E402
from bench.model import GPT, config_from_preset  # noqa: E402
from bench.nanogpt import lr_at, versions  # noqa: E402
from bench.out_dir import default_out_dir  # noqa: E402


def sdpa_causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def train(args, device):
    data = stdlib_corpus(max_bytes=None if ON_GPU else 400_000)
    config = config_from_preset(args.preset, vocab_size=data.vocab_size, block_size=args.block)
    torch.manual_seed(args.seed)
    model = GPT(config, sdpa_causal).to(device)
    schedule = types.SimpleNamespace(lr=args.lr, min_lr=args.lr / 10, warmup_steps=max(1, args.steps // 10),
                                     steps=args.steps)
    optimizer = model.configure_optimizers(0.1, args.lr, (0.9, 0.95), device.type)
    sampler = BatchSampler(data, args.batch, args.block, device, seed=args.seed)
    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    start = time.time()
    for step in range(args.steps):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, schedule)
        x, y = sampler.train_batch(step)
        with autocast:
            _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    print(f"trained {args.steps} steps in {time.time() - start:.0f} s, last train loss {loss.item():.4f}")
    return model, sampler, autocast, loss.item()


def capture_qkv(model, sampler, autocast, rows):
    """Every layer's (q, k, v), SDPA's layout (B, H, S, D), bf16, on rows sequences of validation batch 0."""
    captured = []

    def record(q, k, v):
        captured.append(tuple(t[:rows].detach().clone() for t in (q, k, v)))
        return sdpa_causal(q, k, v)
    model.set_attention(record)
    x, _ = sampler.val_batch(0)
    with torch.no_grad(), autocast:
        model(x)
    model.set_attention(sdpa_causal)
    return captured


def float64_attention(q, k, v):
    """Causal attention in float64 by fa_ck's specification (reference.py), SDPA's layout in and out."""
    out, _ = reference.attention(*(t.transpose(1, 2) for t in (q, k, v)), causal=True, dtype=torch.float64,
                                 out_dtype=torch.float64)
    return out.transpose(1, 2)


def relative_error(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def head_stats(q, k):
    """The visible scaled logits' std (median over heads), and q's and k's outlier ratio: the
    largest channel's rms over the median channel's (max over heads)."""
    s = q.shape[2]
    visible = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
    stds, ratios = [], []
    for h in range(q.shape[1]):
        scores = (q[0, h].float() @ k[0, h].float().T) / math.sqrt(q.shape[-1])
        stds.append(scores[visible].std().item())
        for t in (q, k):
            rms = t[:, h].float().pow(2).mean(dim=(0, 1)).sqrt()
            ratios.append((rms.max() / rms.median()).item())
    return sorted(stds)[len(stds) // 2], max(ratios)


def measure(captured):
    rows = []
    for layer, (q, k, v) in enumerate(captured):
        ref = float64_attention(q, k, v)
        row = dict(layer=layer)
        row["fp8"] = relative_error(fa_ck.attention(q, k, v, causal=True, fp8=True), ref)
        row["fa_ck_bf16"] = relative_error(fa_ck.attention(q, k, v, causal=True), ref)
        row["sdpa_bf16"] = relative_error(sdpa_causal(q, k, v), ref)
        row["logit_std"], row["outlier_ratio"] = head_stats(q, k)
        gen = torch.Generator(device=q.device).manual_seed(layer)
        q0, k0, v0 = (torch.randn(q.shape, generator=gen, device=q.device).to(q.dtype) for _ in range(3))
        row["fp8_randn"] = relative_error(fa_ck.attention(q0, k0, v0, causal=True, fp8=True),
                                          float64_attention(q0, k0, v0))
        rows.append(row)
        print(f"layer {layer}: fp8 {row['fp8']:.4f} (N(0, 1) {row['fp8_randn']:.4f}), fa_ck bf16 "
              f"{row['fa_ck_bf16']:.4f}, sdpa {row['sdpa_bf16']:.4f}, logit std {row['logit_std']:.2f}, "
              f"outlier ratio {row['outlier_ratio']:.1f}")
    return rows


def markdown(rows, meta):
    lines = [f"# fp8 attention on a trained nanoGPT's q, k, v — {meta['device']}", "",
             f"- command: `{meta['command']}`", f"- date: {meta['date']}", f"- versions: {meta['versions']}",
             f"- model: preset {meta['preset']}, {meta['steps']} steps (last train loss {meta['train_loss']:.4f}); "
             f"q, k, v of {meta['capture']} validation sequences of {meta['block']} tokens per layer", "",
             "| layer | fp8 error | fp8 on N(0, 1) of the same shape | fa_ck bf16 | SDPA bf16 | logit std "
             "(median head) | q/k outlier ratio (max) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['layer']} | {100 * r['fp8']:.2f} % | {100 * r['fp8_randn']:.2f} % | "
                     f"{100 * r['fa_ck_bf16']:.3f} % | {100 * r['sdpa_bf16']:.3f} % | {r['logit_std']:.2f} | "
                     f"{r['outlier_ratio']:.1f} |")
    lines += ["", "Errors: ||out - ref|| / ||ref|| over the layer's captured heads, ref in float64. Logit "
              "std: of the scaled scores q.k / sqrt(d) a query sees, sequence 0, median over heads. Outlier "
              "ratio: a head's largest channel rms over its median channel rms, in q or k, max over heads."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="gpt2" if ON_GPU else "tiny")
    ap.add_argument("--steps", type=int, default=600 if ON_GPU else 5)
    ap.add_argument("--batch", type=int, default=64 if ON_GPU else 4)
    ap.add_argument("--block", type=int, default=1024 if ON_GPU else 64)
    ap.add_argument("--capture", type=int, default=16 if ON_GPU else 2, help="validation sequences measured")
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--out", default=None, help="directory for results.md and results.json "
                                                "(default ./fa_ck-results/fp8_trained-<gpu or cpu>-<date>/)")
    args = ap.parse_args(argv)
    device = torch.device("cuda" if ON_GPU else "cpu")
    model, sampler, autocast, train_loss = train(args, device)
    rows = measure(capture_qkv(model, sampler, autocast, args.capture))
    given = argv if argv is not None else sys.argv[1:]
    meta = dict(device=torch.cuda.get_device_name() if ON_GPU else "CPU (Triton interpreter)",
                command="python " + " ".join([os.path.relpath(__file__)] + given),
                date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), preset=args.preset, steps=args.steps,
                block=args.block, capture=args.capture, train_loss=train_loss,
                versions=", ".join(f"{name} {v}" for name, v in versions().items() if v is not None))
    text = markdown(rows, meta)
    print(text)
    out = args.out or str(default_out_dir("fp8_trained", meta["device"] if ON_GPU else "cpu"))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(dict(meta=meta, layers=rows), f, indent=1)
    print(f"wrote {out}/results.md and results.json")
    return rows


if __name__ == "__main__":
    main()
