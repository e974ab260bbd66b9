#!/usr/bin/env python
"""nanoGPT trained once per attention variant: loss, speed, memory, one report.

    python bench/nanogpt.py                          # every variant available here, the GPU defaults
    python bench/nanogpt.py --attn sdpa,triton --steps 200 --time-budget 480
    torchrun --nproc_per_node 2 bench/nanogpt.py     # data-parallel (nccl on GPUs, gloo on the CPU)

On a GPU by default: GPT-2 124M, batch 64, block 1024, 1000 steps, with each attention
variant (--attn all): naive, sdpa, flex, triton, triton-autotune, triton-fp8, ck, te. Every
variant starts from the same weights and sees the same batches in the same order; only
the attention function differs. A variant that cannot run here is skipped with its
reason, one that breaks is recorded as failed with its reason, and the others go on.

Output (--out, default ./fa_ck-results/nanogpt-<device>-<date>/), rewritten after every
variant so a run cut short still leaves its report:
    results.json      everything: command, device, versions, per-variant curves and figures
    results.md        one table, plus skipped/failed variants and why
    loss_curves.png   train and val loss of every variant, overlaid
    tokens_per_s.png  throughput bars;  peak_memory.png  peak GPU memory bars (GPU only)

With no GPU it trains the tiny preset for a few steps with sdpa, naive and `auto` (fa_ck's own
dispatch, which names the backend that served it), and the `triton` variant runs fa_ck's Triton
kernels in Triton's interpreter on a short run of its own beside sdpa (bench/nanogpt_cpu.py):
about a minute in all.
"""

import argparse
import datetime
import gc
import math
import os
import platform
import shlex
import signal
import statistics
import sys
import time
import traceback
from contextlib import contextmanager, nullcontext

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __package__ in (None, ""):
    # run as a script (python bench/nanogpt.py): make `bench` importable as a package
    sys.path.insert(0, REPO_ROOT)

from bench.attention_share import attention_ms_per_step  # noqa: E402
from bench.data import BatchSampler, load_tokens  # noqa: E402
from bench.model import GPT, PRESETS, config_dict, config_from_preset, naive_causal_attention  # noqa: E402
from bench.nanogpt_report import text_table, variant_label, write_report  # noqa: E402
from bench.nanogpt_cpu import default_threads, describe_short_run, short_interpreted_run  # noqa: E402
from bench.out_dir import default_out_dir  # noqa: E402
from bench.sample import sample_trained, summary_line  # noqa: E402

# Run order: sdpa first, as the reference the others are compared with; naive last,
# because it is the likeliest to run out of memory. auto is fa_ck's own dispatch: on a GPU it
# repeats the triton or ck variant, so there `all` leaves it out.
VARIANTS = ["sdpa", "auto", "triton", "triton-autotune", "triton-fp8", "ck", "flex", "te", "naive"]
NAMED_ONLY_ON_GPU = {"auto"}
# Compiling naive attention would fuse its mask and softmax: it stays eager, to measure the unfused baseline.
EAGER_VARIANTS = {"naive"}
TRITON_VARIANTS = ("triton", "triton-autotune", "triton-fp8")
# make_variant's answer for a variant that trains in a child process (nanogpt_cpu.SHORT_RUN)
SHORT_RUN_VARIANT = "short interpreted run"

# Dense bf16/fp16 tensor-core peak FLOP/s, for MFU. First match on the device name wins.
PEAK_FLOPS = [
    ("H100 PCIe", 756e12),
    ("H200", 989.5e12),
    ("H100", 989.5e12),
    ("GH200", 989.5e12),
    ("MI325X", 1307.4e12),
    ("MI300X", 1307.4e12),
    ("A100", 312e12),
]

# Learning rate per preset (GPT-3 paper's values for these sizes; the tiny one likes it higher).
PRESET_LR = {"tiny": 1e-3, "gpt2": 6e-4, "gpt2-long": 6e-4, "gpt2-medium": 3e-4, "gpt2-large": 2.5e-4}

# Defaults with no GPU: small enough to finish in seconds on a laptop or CI runner.
# eval_every None: five evaluations per run, whatever --steps is.
# On a GPU the whole model is compiled, as nanoGPT does, and batch None keeps GPU_TOKENS_PER_STEP
# tokens per step at any block size (64 x 1024 for gpt2, 8 x 8192 for gpt2-long).
CPU_DEFAULTS = dict(preset="tiny", batch=8, block=128, steps=30, eval_every=None, eval_iters=2, compile=False)
GPU_DEFAULTS = dict(preset="gpt2", batch=None, block=None, steps=1000, eval_every=None, eval_iters=10, compile=True)
GPU_TOKENS_PER_STEP = 64 * 1024

class Skip(Exception):
    """A variant that cannot run here (not a bug): recorded as skipped with this reason."""


class Interrupted(BaseException):
    """SIGTERM (e.g. a time limit) arrived: finish the report, then stop."""


# ----------------------------------------------------------------------------------------
# attention variants: each a function attn(q, k, v) -> y, SDPA layout (B, H, T, D), causal

def sdpa_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def import_fa_ck():
    """fa_ck from the installed package, else from this checkout's python/ directory."""
    try:
        import fa_ck
        return fa_ck
    except ImportError:
        source = os.path.join(REPO_ROOT, "python")
        if os.path.isdir(os.path.join(source, "fa_ck")) and source not in sys.path:
            sys.path.insert(0, source)
            import fa_ck
            return fa_ck
        raise


def load_fa_ck():
    try:
        fa_ck = import_fa_ck()
    except Exception as e:  # a half-written package can fail with anything, not only ImportError
        raise Skip(f"import fa_ck failed: {type(e).__name__}: {first_line(e)}")
    if not hasattr(fa_ck, "attention"):
        raise Skip("fa_ck has no attention() yet")
    return fa_ck


def interpreted_here(device):
    return device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1"


def fa_ck_attention(backend, device, fp8=False):
    fa_ck = load_fa_ck()
    if hasattr(fa_ck, "backends"):
        available, reason = fa_ck.backends().get(backend, (False, "not listed by fa_ck.backends()"))
        if not available:
            raise Skip(f"fa_ck backend {backend!r} unavailable: {reason}")
    extra = dict(fp8=True) if fp8 else dict()

    def attention(q, k, v):
        return fa_ck.attention(q, k, v, causal=True, backend=backend, **extra)
    return attention


def served_by(fa_ck, q, k, v):
    """The backend fa_ck's dispatch picks for this call, from the last line of fa_ck.explain()."""
    if not hasattr(fa_ck, "explain"):
        return "unknown"
    last = fa_ck.explain(q, k, v, causal=True).strip().splitlines()[-1]
    return last.split("-> ", 1)[-1]


def fa_ck_auto_attention():
    """fa_ck.attention with its default dispatch; attention.served_by maps each call shape it saw
    (outside torch.compile's tracing) to the backend that served it."""
    fa_ck = load_fa_ck()
    served = {}

    def attention(q, k, v):
        if not torch.compiler.is_compiling():
            key = (tuple(q.shape), q.dtype, q.device)
            if key not in served:
                served[key] = served_by(fa_ck, q, k, v)
        return fa_ck.attention(q, k, v, causal=True)
    attention.served_by = served
    return attention


def raise_dynamo_limits():
    """A recompile past dynamo's limit silently falls back to eager, and for flex that means
    a slow unfused path: lift the limits and make hitting them an error, not a fallback."""
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), 256))
    for name in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):
        if hasattr(config, name):
            setattr(config, name, True)


def flex_attention_variant(seq_len, device):
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError as e:
        raise Skip(f"this torch has no FlexAttention: {first_line(e)}")
    raise_dynamo_limits()

    def causal(batch, head, q_idx, kv_idx):
        return q_idx >= kv_idx

    # One block mask, built once for the training length and reused: building it per call
    # would be timed, and a new mask object per call could cost recompiles.
    block_mask = create_block_mask(causal, None, None, seq_len, seq_len, device=device)
    compiled_flex = torch.compile(flex_attention, dynamic=False)

    def attention(q, k, v):
        return compiled_flex(q, k, v, block_mask=block_mask)

    def probe(q, k, v):
        # uncompiled: checks the inputs (and the CPU's lack of a backward) without a compile
        mask = create_block_mask(causal, None, None, q.size(-2), q.size(-2), device=device)
        return flex_attention(q, k, v, block_mask=mask)
    return attention, probe


def transformer_engine_variant(n_head, head_dim, device):
    if device.type != "cuda":
        raise Skip("TransformerEngine needs a GPU")
    try:
        import transformer_engine.pytorch as te
    except Exception as e:
        raise Skip(f"TransformerEngine not importable: {type(e).__name__}: {first_line(e)}")
    dot_product_attention = te.DotProductAttention(
        num_attention_heads=n_head, kv_channels=head_dim, attention_dropout=0.0,
        attn_mask_type="causal", qkv_format="bshd")

    def attention(q, k, v):
        batch, heads, seq_len, dim = q.shape
        # TE takes (batch, seq, heads, dim) and returns (batch, seq, heads * dim)
        out = dot_product_attention(*(t.transpose(1, 2).contiguous() for t in (q, k, v)))
        return out.reshape(batch, seq_len, heads, dim).transpose(1, 2)
    return attention


def make_variant(name, explicit, device, seq_len, n_head, head_dim):
    """(attention, probe, environment) for a variant, or raise Skip. `probe` is a cheap
    stand-in for attention used by the check before training (often attention itself)."""
    if name == "naive":
        return naive_causal_attention, naive_causal_attention, {}
    if name == "sdpa":
        return sdpa_attention, sdpa_attention, {}
    if name == "flex":
        attention, probe = flex_attention_variant(seq_len, device)
        return attention, probe, {}
    if name == "auto":
        attention = fa_ck_auto_attention()
        return attention, attention, {}
    if name in TRITON_VARIANTS:
        if device.type == "cpu" and not (explicit and interpreted_here(device)):
            # In the interpreter a step of this run would take about a minute: triton trains a
            # short run of its own instead, in a child process that sets TRITON_INTERPRET=1 first.
            if name == "triton":
                return SHORT_RUN_VARIANT, None, {}
            raise Skip("on the CPU only the triton variant runs, in the Triton interpreter on a short "
                       "run of its own (name it in --attn under TRITON_INTERPRET=1 to train this run "
                       "interpreted: about a minute a step)")
        attention = fa_ck_attention("triton", device, fp8=(name == "triton-fp8"))
        # FA_CK_AUTOTUNE is read at call time: 1 searches kernel configs (cached on disk), 0 uses heuristics
        return attention, attention, {"FA_CK_AUTOTUNE": "1" if name == "triton-autotune" else "0"}
    if name == "ck":
        attention = fa_ck_attention("ck", device)
        return attention, attention, {}
    if name == "te":
        attention = transformer_engine_variant(n_head, head_dim, device)
        return attention, attention, {}
    raise ValueError(f"unknown attention variant {name!r}")


@contextmanager
def environment(variables):
    saved = {key: os.environ.get(key) for key in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def probe_variant(probe, device, dtype, n_head, head_dim):
    """Run the variant once, forward and backward, on a small causal problem and compare
    its output with naive attention in float32. Raises what the variant raises."""
    generator = torch.Generator().manual_seed(0)
    shape = (1, n_head, 64, head_dim)
    inputs = [torch.randn(shape, generator=generator) for _ in range(3)]
    q, k, v = (t.to(device=device, dtype=dtype).clone().requires_grad_() for t in inputs)
    out = probe(q, k, v)
    out.float().sum().backward()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    expected = naive_causal_attention(*(t.to(device) for t in inputs))
    return float((out.detach().float() - expected).abs().max())


def served_label(attention):
    """The fa_ck backend(s) that served an `auto` variant, or None for a variant without dispatch."""
    served = getattr(attention, "served_by", None)
    if served is None:
        return None
    return ", ".join(sorted(set(served.values()))) or "unknown"


def check_served(name, attention, explicit, device, result):
    """Records which backend served the variant's check and whether it ran interpreted. A run
    interpreted here takes about a minute a step: it trains only when named in --attn."""
    label = served_label(attention)
    if label:
        result["served_by"] = label
    if interpreted_here(device) and (name in TRITON_VARIANTS or "triton" in (label or "")):
        result["interpreted"] = True
        if not explicit:
            raise Skip(f"TRITON_INTERPRET=1 sends it to the triton backend, which would train this run in "
                       f"Triton's interpreter (about a minute a step); name {name} in --attn to train it anyway")


def interpreted_warning(name, probe_s, args, config):
    # the check is one layer of batch 1 x block 64; the interpreter's time grows about linearly in each
    step_s = probe_s * config.n_layer * args.batch * args.block / 64
    return (f"warning: {name} runs fa_ck's Triton kernels in Triton's interpreter: about {step_s:,.0f} s a step "
            f"here, {args.steps} steps (without TRITON_INTERPRET the triton variant trains a short run instead)")


def result_line(name, result):
    line = (f"{variant_label(name, result):>15}: val loss {result['final_val_loss']:.4f}, "
            f"{result['median_ms_per_step']:.1f} ms/step, {result['tokens_per_s']:,.0f} tokens/s")
    if "peak_memory_gib" in result:
        line += f", peak {result['peak_memory_gib']:.2f} GiB"
    run = result.get("separate_run")
    if run and run["sdpa"].get("final_val_loss") is not None:
        line += (f"; that run's sdpa: val loss {run['sdpa']['final_val_loss']:.4f}, "
                 f"Δ {result.get('val_loss_delta_vs_sdpa', float('nan')):+.2g}")
    return line


# ----------------------------------------------------------------------------------------
# environment: device, data-parallel, versions

def first_line(error):
    text = str(error).strip().splitlines()
    return text[0][:400] if text else ""


def describe_error(error):
    return f"{type(error).__name__}: {first_line(error)}"


def setup_distributed():
    """(rank, local_rank, world_size, device). DDP when launched by torchrun with >1 process."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return 0, 0, 1, torch.device("cuda" if torch.cuda.is_available() else "cpu")
    import torch.distributed as dist
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    return rank, local_rank, world_size, device


def peak_flops_for(device_name):
    for key, flops in PEAK_FLOPS:
        if key.lower() in device_name.lower():
            return flops
    return None


def versions():
    found = {"python": platform.python_version(), "torch": torch.__version__,
             "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None),
             "numpy": np.__version__}
    try:
        import triton
        found["triton"] = triton.__version__
    except Exception:
        found["triton"] = None
    found["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    try:
        found["fa_ck"] = getattr(import_fa_ck(), "__version__", "unknown")
    except Exception as e:
        found["fa_ck"] = f"not importable ({describe_error(e)})"
    return found


def device_description(device):
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return {"type": "cuda", "name": props.name, "memory_gib": round(props.total_memory / 2**30, 1),
                "count": torch.cuda.device_count(),
                "arch": getattr(props, "gcnArchName", None) or f"sm_{props.major}{props.minor}"}
    return {"type": "cpu", "name": cpu_name(), "threads": torch.get_num_threads()}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# ----------------------------------------------------------------------------------------
# training one variant

def lr_at(step, args):
    """Linear warmup to args.lr, then cosine decay to args.min_lr at the last step (nanoGPT's schedule)."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / (args.warmup_steps + 1)
    progress = (step - args.warmup_steps) / max(1, args.steps - args.warmup_steps)
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress))) * (args.lr - args.min_lr)


def autocast_for(device, dtype):
    if dtype == torch.float32:
        return nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def all_gather_floats(values, world_size):
    """Every rank's list of floats, as a (world_size, len) list; no-op for one process."""
    local = torch.tensor(values, dtype=torch.float64)
    if world_size == 1:
        return [local.tolist()]
    import torch.distributed as dist
    backend_device = torch.device("cuda", torch.cuda.current_device()) \
        if dist.get_backend() == "nccl" else torch.device("cpu")
    local = local.to(backend_device)
    gathered = [torch.empty_like(local) for _ in range(world_size)]
    dist.all_gather(gathered, local)
    return [t.cpu().tolist() for t in gathered]


@torch.no_grad()
def evaluate(model, sampler, args, run):
    """Mean loss over the fixed validation batches (the same ones for every variant), averaged over ranks."""
    model.eval()
    losses = []
    for index in range(args.eval_iters):
        x, y = sampler.val_batch(index)
        for x_micro, y_micro in zip(x.chunk(run["grad_accum"]), y.chunk(run["grad_accum"])):
            with run["autocast"]:
                _, loss = model(x_micro, y_micro)
            losses.append(float(loss))
    model.train()
    per_rank = all_gather_floats([statistics.fmean(losses)], run["world_size"])
    return statistics.fmean(r[0] for r in per_rank)


def parameter_checksum(model):
    """Sum and sum of squares of all weights: equal across ranks iff DDP kept them in sync."""
    with torch.no_grad():
        total = sum(p.detach().double().sum() for p in model.parameters())
        squares = sum(p.detach().double().square().sum() for p in model.parameters())
    return [float(total), float(squares)]


def train_variant(name, attention, args, run, init_state, result):
    """Train args.steps steps with this attention; fills `result` as it goes, so what was
    measured survives an exception."""
    device, world_size = run["device"], run["world_size"]
    model = GPT(run["config"], attention)
    model.load_state_dict(init_state)
    model.to(device)
    optimizer = model.configure_optimizers(args.weight_decay, args.lr, (0.9, 0.95), device.type)
    # fp16 needs loss scaling to keep small gradients from flushing to zero; bf16 and fp32 do not
    scaler = torch.amp.GradScaler(device.type, enabled=(run["dtype"] == torch.float16))
    result["compile_asked"], result["compiled"] = args.compile, args.compile and name not in EAGER_VARIANTS
    compiled = torch.compile(model) if result["compiled"] else model
    trained = compiled
    if world_size > 1:
        from torch.nn.parallel import DistributedDataParallel
        trained = DistributedDataParallel(compiled, device_ids=[device.index] if device.type == "cuda" else None)

    sampler = BatchSampler(run["data"], args.batch, args.block, device, seed=args.seed,
                           rank=run["rank"], world_size=world_size)
    grad_accum = run["grad_accum"]
    tokens_per_step = args.batch * args.block * world_size
    result.update(train_loss=[], val_loss=[], step_ms=[], steps_done=0, grad_accum=grad_accum)
    if world_size > 1:
        result["train_loss_per_rank"] = [[] for _ in range(world_size)]

    def eval_now(step):
        val = evaluate(compiled, sampler, args, run)
        result["val_loss"].append([step, val])
        return val

    deadline = run.get("deadline")
    last_val = eval_now(0)
    bar = tqdm(total=args.steps, desc=f"{name:>15}", disable=run["rank"] != 0, dynamic_ncols=True,
               mininterval=0.2 if sys.stderr.isatty() else 30.0, file=sys.stderr)
    try:
        for step in range(args.steps):
            lr = lr_at(step, args)
            for group in optimizer.param_groups:
                group["lr"] = lr
            x, y = sampler.train_batch(step)
            started = time.perf_counter()
            loss_sum = torch.zeros((), device=device)
            for micro, (x_micro, y_micro) in enumerate(zip(x.chunk(grad_accum), y.chunk(grad_accum))):
                # DDP all-reduces gradients only on the last micro-batch of the step
                sync = trained.no_sync() if world_size > 1 and micro < grad_accum - 1 else nullcontext()
                with sync:
                    with run["autocast"]:
                        _, loss = trained(x_micro, y_micro)
                        loss = loss / grad_accum
                    scaler.scale(loss).backward()
                loss_sum += loss.detach().float()
            if args.grad_clip > 0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            loss_value = float(loss_sum)  # waits for this step's GPU work
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            elapsed = time.perf_counter() - started

            out_of_time = deadline is not None and time.time() > deadline
            gathered = all_gather_floats([loss_value, float(out_of_time)], world_size)
            result["train_loss"].append([step + 1, statistics.fmean(r[0] for r in gathered)])
            if world_size > 1:
                for rank_losses, rank_values in zip(result["train_loss_per_rank"], gathered):
                    rank_losses.append(rank_values[0])
            result["step_ms"].append(elapsed * 1e3)
            result["steps_done"] = step + 1
            if not math.isfinite(loss_value):
                raise FloatingPointError(f"loss is {loss_value} at step {step + 1}")
            bar.set_postfix(loss=f"{loss_value:.4f}", val=f"{last_val:.4f}",
                            tok_s=f"{tokens_per_step / elapsed:,.0f}", refresh=False)
            bar.update(1)
            if (step + 1) % args.eval_every == 0 and step + 1 < args.steps:
                last_val = eval_now(step + 1)
            if any(r[1] for r in gathered):
                result["stopped_early"] = f"time budget reached after {step + 1} of {args.steps} steps"
                break
    finally:
        bar.close()
    eval_now(result["steps_done"])
    result["param_checksum_per_rank"] = all_gather_floats(parameter_checksum(model), world_size)
    run["trained"] = (name, {key: t.detach().cpu() for key, t in model.state_dict().items()})  # for sampling
    if device.type == "cuda":
        result["peak_memory_bytes"] = torch.cuda.max_memory_allocated(device)


def summarize(result, args, run):
    """Derived figures: final losses, median step time after warm-up, tokens/s, MFU."""
    losses = [loss for _, loss in result.get("train_loss", [])]
    if losses:
        tail = losses[-min(10, len(losses)):]
        result["final_train_loss"] = statistics.fmean(tail)  # mean of the last 10 steps: less noisy
    if result.get("val_loss") and result["val_loss"][-1][0] == result.get("steps_done"):
        result["final_val_loss"] = result["val_loss"][-1][1]  # not for a run cut short before its last eval
    step_ms = result.get("step_ms", [])
    if step_ms:
        # the first steps carry compilation, autotuning and allocator warm-up
        measured = step_ms[args.timing_skip:] if len(step_ms) > args.timing_skip else step_ms[-1:]
        median_ms = statistics.median(measured)
        result["first_step_ms"] = step_ms[0]
        result["timed_steps"] = len(measured)
        result["median_ms_per_step"] = median_ms
        tokens_per_step = args.batch * args.block * run["world_size"]
        result["tokens_per_s"] = tokens_per_step / (median_ms / 1e3)
        per_device_tokens_per_s = result["tokens_per_s"] / run["world_size"]
        result["mfu"] = run["model_info"]["mfu"](per_device_tokens_per_s)
        if result.get("attention_ms_per_step") is not None:
            result["attention_share"] = result["attention_ms_per_step"] / median_ms
    if result.get("peak_memory_bytes") is not None:
        result["peak_memory_gib"] = result["peak_memory_bytes"] / 2**30


def free_device_memory(device):
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def measure_attention(attention, args, run, result):
    """Milliseconds of each step spent in attention (bench/attention_share.py says how)."""
    config = run["config"]
    if result.get("interpreted"):
        return  # an interpreted kernel's time says nothing about attention's share
    free_device_memory(run["device"])
    try:
        with run["autocast"]:
            result["attention_ms_per_step"] = attention_ms_per_step(
                attention, micro_batch=args.batch // run["grad_accum"], n_head=config.n_head, seq_len=args.block,
                head_dim=config.n_embd // config.n_head, n_layer=config.n_layer, grad_accum=run["grad_accum"],
                device=run["device"], dtype=run["dtype"])
    except Exception as error:  # the share is a side measurement: the training result stands without it
        result.setdefault("notes", []).append(f"attention share not measured: {describe_error(error)}")


def is_out_of_memory(error):
    return isinstance(error, torch.OutOfMemoryError) or "out of memory" in str(error).lower()


def run_variant(name, attention, args, run, init_state, result):
    """Train one variant, retrying with twice the gradient accumulation (same batch, same
    data, smaller micro-batches) when it runs out of memory."""
    run["grad_accum"] = args.grad_accum
    while True:
        free_device_memory(run["device"])
        started = time.time()
        try:
            train_variant(name, attention, args, run, init_state, result)
            result["status"] = "ok"
            measure_attention(attention, args, run, result)
            return
        except Exception as error:
            can_split = args.batch % (2 * run["grad_accum"]) == 0
            if is_out_of_memory(error) and can_split and run["world_size"] == 1:
                result.setdefault("notes", []).append(
                    f"out of memory at micro-batch {args.batch // run['grad_accum']}; "
                    f"retried with {args.batch // (2 * run['grad_accum'])} x {2 * run['grad_accum']} accumulation")
                run["grad_accum"] *= 2
                continue
            raise
        finally:
            result["wall_s"] = time.time() - started
            # free this variant's model, optimizer, gradients and compiled graphs before the next
            gc.collect()
            if args.compile or name == "flex":
                torch._dynamo.reset()
            free_device_memory(run["device"])


# ----------------------------------------------------------------------------------------
# command line

class HelpFormatter(argparse.HelpFormatter):
    """Adds '(default: X)' to a help line that does not already say its default, when there is one."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        return text + " (default: %(default)s)"


def parse_args(argv, on_gpu):
    def per_device(key):
        gpu = {None: f"{GPU_TOKENS_PER_STEP} tokens / block"}.get(GPU_DEFAULTS[key], GPU_DEFAULTS[key])
        return f"(default {gpu} on a GPU, {CPU_DEFAULTS[key]} on the CPU)"

    parser = argparse.ArgumentParser(
        description="Train nanoGPT once per attention variant and report loss, speed and memory.",
        formatter_class=HelpFormatter)
    parser.add_argument("--attn", default="all",
                        help=f"comma-separated variants, or 'all': {','.join(VARIANTS)} "
                             f"('all' on a GPU leaves out {','.join(sorted(NAMED_ONLY_ON_GPU))})")
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None,
                        help="model shape (default: gpt2 on a GPU, tiny on the CPU)")
    parser.add_argument("--steps", type=int, default=None, help=f"optimizer steps per variant {per_device('steps')}")
    parser.add_argument("--batch", type=int, default=None, help=f"sequences per step per process {per_device('batch')}")
    parser.add_argument("--block", type=int, default=None, help="sequence length (default: the preset's)")
    parser.add_argument("--grad-accum", type=int, default=1,
                        help="split each step's batch into this many micro-batches (same data, less memory)")
    parser.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default=None,
                        help="autocast dtype (default bf16 on a GPU, fp32 on the CPU)")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                        help=f"torch.compile the whole model, fa_ck's ops inside the graph {per_device('compile')}")
    parser.add_argument("--eval-every", type=int, default=None, help="steps between validation evaluations (default steps / 5)")
    parser.add_argument("--eval-iters", type=int, default=None, help=f"validation batches per evaluation {per_device('eval_iters')}")
    parser.add_argument("--data", default=None,
                        help="nanoGPT data dir (train.bin/val.bin) or a text file; default: Python's stdlib sources")
    parser.add_argument("--out", default=None,
                        help="output directory (default ./fa_ck-results/nanogpt-<device>-<date>)")
    parser.add_argument("--lr", type=float, default=None, help="peak learning rate (default per preset)")
    parser.add_argument("--min-lr", type=float, default=None, help="final learning rate (default lr / 10)")
    parser.add_argument("--warmup-steps", type=int, default=None, help="linear warmup steps (default steps / 10)")
    parser.add_argument("--weight-decay", type=float, default=0.1, help="AdamW's weight decay of the matrices")
    parser.add_argument("--grad-clip", type=float, default=1.0, help="clip the gradient norm (0: off)")
    parser.add_argument("--seed", type=int, default=1337, help="seeds the initial weights and the batches")
    parser.add_argument("--timing-skip", type=int, default=None,
                        help="first steps left out of the median step time (default min(10, steps / 5))")
    parser.add_argument("--time-budget", type=float, default=None,
                        help="seconds for the whole run; each variant gets an equal share of what is left "
                             "and stops early (recorded) when it uses it up")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for torch (default on the CPU: every core this process may use, "
                             "shared among torchrun's processes, unless OMP_NUM_THREADS is set)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--sample", action=argparse.BooleanOptionalAction, default=True,
                        help="after training, decode from the last trained model with fa_ck's KV cache and "
                             "without one: tokens/s and agreement (bench/sample.py)")
    args = parser.parse_args(argv)

    defaults = GPU_DEFAULTS if on_gpu else CPU_DEFAULTS
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.block is None:
        args.block = PRESETS[args.preset]["block_size"]
    if args.batch is None:
        args.batch = max(1, GPU_TOKENS_PER_STEP // args.block)
    if args.dtype is None:
        args.dtype = "bf16" if on_gpu else "fp32"
    if args.lr is None:
        args.lr = PRESET_LR[args.preset]
    if args.min_lr is None:
        args.min_lr = args.lr / 10
    if args.warmup_steps is None:
        args.warmup_steps = max(1, args.steps // 10)
    if args.timing_skip is None:
        args.timing_skip = min(10, args.steps // 5)
    args.eval_every = max(1, args.eval_every or args.steps // 5)

    requested = [name.strip() for name in args.attn.split(",") if name.strip()]
    if requested == ["all"]:
        args.variants = [name for name in VARIANTS if not (on_gpu and name in NAMED_ONLY_ON_GPU)]
        args.explicit = set()
    else:
        unknown = [name for name in requested if name not in VARIANTS]
        if unknown or not requested:
            parser.error(f"--attn: unknown variant(s) {unknown}; choose from {','.join(VARIANTS)} or all")
        args.variants, args.explicit = list(dict.fromkeys(requested)), set(requested)
    for flag in ("steps", "batch", "block", "grad_accum", "eval_iters"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.batch % args.grad_accum:
        parser.error(f"--batch {args.batch} is not divisible by --grad-accum {args.grad_accum}")
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    rank, local_rank, world_size, device = setup_distributed()
    on_gpu = device.type == "cuda"
    args = parse_args(argv, on_gpu)
    say = print if rank == 0 else (lambda *a, **k: None)
    if not on_gpu and "--preset" not in " ".join(argv):
        say(f"No GPU found: running the tiny preset on the CPU ({args.steps} steps, batch {args.batch}, "
            f"block {args.block}); pass --preset/--steps/--batch to change.")

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    elif not on_gpu and "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(max(1, default_threads() // world_size))  # torchrun's processes share them

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    if on_gpu:
        # TF32 for the float32 matmuls that remain (nanoGPT does the same)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    data = load_tokens(args.data)
    config = config_from_preset(args.preset, vocab_size=data.vocab_size, block_size=args.block)
    # One set of initial weights, made on the CPU from the seed, loaded into every variant's model.
    torch.manual_seed(args.seed)
    init_model = GPT(config)
    init_state = init_model.state_dict()  # never trained: each variant's model copies from it
    n_params = init_model.num_params()
    device_info = device_description(device)
    peak = peak_flops_for(device_info["name"]) if on_gpu and dtype != torch.float32 else None

    def mfu(tokens_per_s):
        return init_model.estimate_mfu(tokens_per_s, args.block, peak)

    out_dir = args.out or str(default_out_dir("nanogpt", device_info["name"] if on_gpu else "cpu"))
    command = shlex.join(getattr(sys, "orig_argv", [sys.executable] + sys.argv))
    if world_size > 1:
        command += f"  # each of {world_size} processes started by torchrun"
    report = {
        "command": command, "argv": argv, "cwd": os.getcwd(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "device": device_info, "peak_flops": peak, "world_size": world_size, "versions": versions(),
        "preset": args.preset, "model": dict(config_dict(config), n_params=n_params),
        "training": {"steps": args.steps, "batch": args.batch, "block": args.block, "grad_accum": args.grad_accum,
                     "tokens_per_step": args.batch * args.block * world_size, "dtype": args.dtype,
                     "compile": args.compile, "lr": args.lr, "min_lr": args.min_lr,
                     "warmup_steps": args.warmup_steps, "weight_decay": args.weight_decay,
                     "grad_clip": args.grad_clip, "seed": args.seed, "eval_every": args.eval_every,
                     "eval_iters": args.eval_iters, "timing_skip": args.timing_skip,
                     "time_budget_s": args.time_budget},
        "data": data.description, "variants": {},
    }
    run = {"device": device, "dtype": dtype, "autocast": autocast_for(device, dtype), "rank": rank,
           "world_size": world_size, "data": data, "config": config, "model_info": {"mfu": mfu}}
    say(f"{args.preset}: {n_params / 1e6:.1f}M parameters; batch {args.batch} x block {args.block} x "
        f"{world_size} process(es); {args.steps} steps; {args.dtype}; data: {data.description}")

    # Decide up front what can run here, so the skips are printed before any training.
    head_dim = config.n_embd // config.n_head
    runnable = []
    for name in args.variants:
        result = report["variants"][name] = {"status": "pending"}
        try:
            attention, probe, env = make_variant(name, name in args.explicit, device, args.block,
                                                 config.n_head, head_dim)
            if attention is SHORT_RUN_VARIANT:
                if world_size > 1:
                    raise Skip("the Triton interpreter's short run is for one process (run without torchrun)")
            else:
                with environment(env):
                    probe_started = time.perf_counter()
                    result["probe_max_abs_err"] = probe_variant(probe, device, dtype, config.n_head, head_dim)
                    probe_s = time.perf_counter() - probe_started
                check_served(name, attention, name in args.explicit, device, result)
                if result.get("interpreted"):
                    say(interpreted_warning(name, probe_s, args, config))
            error = None
        except Skip as skip:
            error = ("skipped", str(skip))
        except (TypeError, NotImplementedError) as e:  # e.g. an fa_ck without the fp8 argument
            error = ("skipped", f"not supported here: {describe_error(e)}")
        except Exception as e:
            error = ("failed", f"probe failed: {describe_error(e)}")
            result["traceback"] = traceback.format_exc(limit=-6)
        if world_size > 1:  # every rank must agree on which variants train, or DDP would hang
            flags = all_gather_floats([0.0 if error else 1.0], world_size)
            if error is None and not all(f[0] for f in flags):
                error = ("skipped", "failed on another rank")
        if error:
            result["status"], result["reason"] = error
            say(f"{error[0]:>8} {name}: {error[1]}")
        else:
            runnable.append((name, attention, env))
    # the short interpreted run last: the main run's results come first
    runnable.sort(key=lambda entry: entry[1] is SHORT_RUN_VARIANT)
    if not runnable:
        say("no variant can run here")

    interrupted = []

    def on_sigterm(signum, frame):
        raise Interrupted(f"signal {signum}")
    previous_handler = signal.signal(signal.SIGTERM, on_sigterm) \
        if threading_is_main() else None
    run_started = time.time()
    try:
        for index, (name, attention, env) in enumerate(runnable):
            result = report["variants"][name]
            if args.time_budget is not None:
                left = args.time_budget - (time.time() - run_started)
                run["deadline"] = time.time() + max(0.0, left) / (len(runnable) - index)
            try:
                if attention is SHORT_RUN_VARIANT:
                    say(f"{name:>15}: fa_ck's Triton kernels in Triton's interpreter, on a short run of "
                        f"its own beside sdpa ({describe_short_run()}), in a child process")
                    result.update(short_interpreted_run(args, out_dir, torch.get_num_threads(),
                                                        run["deadline"] - time.time() if "deadline" in run else None))
                else:
                    with environment(env):
                        run_variant(name, attention, args, run, init_state, result)
                    if served_label(attention):  # the training calls' shapes, besides the check's
                        result["served_by"] = served_label(attention)
            except (Interrupted, KeyboardInterrupt) as stop:
                result["status"], result["reason"] = "interrupted", f"stopped by {stop or 'Ctrl-C'}"
                interrupted.append(name)
            except Exception as e:
                result["status"], result["reason"] = "failed", describe_error(e)
                result["traceback"] = traceback.format_exc(limit=-8)
                say(f"  failed {name}: {result['reason']}")
            if not result.get("separate_run"):
                summarize(result, args, run)
            if rank == 0:
                write_report(report, out_dir, plots=not args.no_plots)
            if result["status"] == "ok":
                say(result_line(name, result))
            elif result["status"] == "failed" and result.get("separate_run"):
                say(f"  failed {name}: {result['reason']}")
            if interrupted:
                break
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)
    if rank == 0 and args.sample and not interrupted:
        report["sampling"] = sample_trained(run.get("trained"), config, data, device, dtype, run["autocast"])
        say(summary_line(report["sampling"]))
    if rank == 0:
        for name, result in report["variants"].items():
            if result["status"] == "pending":
                result["status"], result["reason"] = "skipped", "not reached: the run was interrupted"
        plots = write_report(report, out_dir, plots=not args.no_plots)
        say("")
        say(text_table(report["variants"]))
        say(f"\nreport: {', '.join([os.path.join(out_dir, 'results.md'), 'results.json'] + plots)}")
    if world_size > 1:
        import torch.distributed as dist
        dist.destroy_process_group()
    if interrupted:
        sys.exit(130)
    return report


def threading_is_main():
    import threading
    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":
    main()
