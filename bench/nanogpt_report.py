"""bench/nanogpt.py's report: the table (stdout and results.md), results.json and the plots."""

import json
import os

from bench.sample import markdown as sampling_markdown

# How far a variant's final val loss may sit from sdpa's: exact attention within 0.02, fp8 within
# 0.05 (e4m3 rounds q, k, P and v, ~5 % of each output)
SANITY_TOLERANCE = 0.02
TOLERANCE_BY_VARIANT = {"triton-fp8": 0.05}


def tolerance(variant: str) -> float:
    return TOLERANCE_BY_VARIANT.get(variant, SANITY_TOLERANCE)



def relative_to_reference(results, reference="sdpa"):
    """Each variant's val loss minus the reference's, at the last step both evaluated."""
    ref = results.get(reference)
    if not ref or ref.get("status") != "ok":
        return
    ref_val = dict((step, loss) for step, loss in ref["val_loss"])
    for name, result in results.items():
        if name == reference or not result.get("val_loss") or result.get("separate_run"):
            continue  # a separate run was compared with the sdpa of that run
        common = [step for step, _ in result["val_loss"] if step in ref_val]
        if not common:
            continue
        step = max(common)
        delta = dict(result["val_loss"])[step] - ref_val[step]
        result["val_loss_delta_vs_sdpa"] = delta
        result["delta_step"] = step
        result["tolerance_vs_sdpa"] = tolerance(name)
        result["within_tolerance_of_sdpa"] = abs(delta) <= tolerance(name)


def fmt(value, spec, missing="–"):
    return missing if value is None else format(value, spec)


def variant_label(name, r):
    """The variant's name, with the fa_ck backend that served it and whether it was interpreted."""
    tags = [r["served_by"]] if r.get("served_by") else []
    if r.get("interpreted") and not r.get("separate_run"):
        tags.append("interpreted")
    if r.get("compile_asked") and r.get("compiled") is False:
        tags.append("eager")
    return f"{name} ({', '.join(tags)})" if tags else name


def short_run_results(results):
    """The variants trained on a separate short run, after that run's own sdpa."""
    separate = {name: r for name, r in results.items() if r.get("separate_run") and r.get("steps_done")}
    if not separate:
        return {}
    first = next(iter(separate.values()))
    return {"sdpa": first["separate_run"]["sdpa"], **separate}


def table_rows(results, separate=False):
    """Rows of the main run's table, or with separate=True of the short run's."""
    rows = []
    for name, r in results.items():
        if r.get("status") not in ("ok", "interrupted") or not r.get("steps_done"):
            continue
        if not separate and r.get("separate_run"):
            continue
        delta = r.get("val_loss_delta_vs_sdpa")
        check = ""
        if delta is not None:
            check = "ok" if r["within_tolerance_of_sdpa"] else f"OUTSIDE ±{tolerance(name)}"
        notes = list(r.get("notes", []))
        if r.get("stopped_early"):
            notes.append(r["stopped_early"])
        if r["status"] != "ok":
            notes.append(r["status"])
        checksums = r.get("param_checksum_per_rank") or []
        if len(checksums) > 1:
            same = all(c == checksums[0] for c in checksums)
            notes.append(f"{len(checksums)} ranks: " + ("weights identical" if same else "WEIGHTS DIFFER"))
        rows.append([
            variant_label(name, r), str(r["steps_done"]), fmt(r.get("final_train_loss"), ".4f"),
            fmt(r.get("final_val_loss"), ".4f"),
            (fmt(delta, "+.4f") + (f" {check}" if check else "")) if delta is not None else "–",
            fmt(r.get("median_ms_per_step"), ".1f"), fmt(r.get("tokens_per_s"), ",.0f"),
            fmt(None if r.get("mfu") is None else 100 * r["mfu"], ".1f"),
            fmt(None if r.get("attention_share") is None else 100 * r["attention_share"], ".0f"),
            fmt(r.get("peak_memory_gib"), ".2f"), "; ".join(notes)])
    return rows


TABLE_HEADER = ["variant", "steps", "train loss", "val loss", "Δ val vs sdpa", "ms/step",
                "tokens/s", "MFU %", "attn %", "peak mem GiB", "notes"]


def markdown_report(report):
    lines = [f"# nanoGPT attention study — {report['device']['name']}", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}",
             f"- device: {report['device']['name']} ({report['device']['type']}), "
             f"{report['world_size']} process(es)",
             "- versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v is not None),
             f"- model: preset `{report['preset']}`, {report['model']['n_params'] / 1e6:.1f}M parameters, "
             f"{report['model']['n_layer']} layers, {report['model']['n_head']} heads, "
             f"{report['model']['n_embd']} wide, vocab {report['model']['vocab_size']}",
             f"- training: {report['training']['steps']} steps, batch {report['training']['batch']} x "
             f"block {report['training']['block']} per process, {report['training']['dtype']}, "
             f"compile {report['training']['compile']}, seed {report['training']['seed']}",
             f"- data: {report['data']}",
             "", "| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
    for row in table_rows(report["variants"]):
        lines.append("| " + " | ".join(cell.replace("|", "/") for cell in row) + " |")
    lines += ["", f"train loss: mean of the last 10 steps. val loss: mean over {report['training']['eval_iters']} "
              "fixed validation batches at the end. Δ val vs sdpa: at the last step both evaluated "
              f"(the bar is ±{SANITY_TOLERANCE}"
              + "".join(f", ±{bar} for {name}" for name, bar in TOLERANCE_BY_VARIANT.items()) + "). ms/step: "
              f"median after the first {report['training']['timing_skip']} steps. MFU: nanoGPT's estimate "
              "against the device's dense bf16 peak (– where the peak is not known). attn %: attention's "
              "forward and backward timed alone at the step's shapes, times the calls a step makes, over "
              "ms/step (bench/attention_share.py)."]
    short = short_run_results(report["variants"])
    if short:
        lines += ["", "## fa_ck's Triton kernels in Triton's interpreter", "",
                  f"{short_run_title(short)}.", "",
                  "| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
        for row in table_rows(short, separate=True):
            lines.append("| " + " | ".join(cell.replace("|", "/") for cell in row) + " |")
    others = [(name, r) for name, r in report["variants"].items() if r.get("status") in ("skipped", "failed")]
    if others:
        lines += ["", "## Not run", ""]
        lines += [f"- **{name}** ({r['status']}): {r.get('reason', '')}" for name, r in others]
    lines += sampling_markdown(report.get("sampling"))
    return "\n".join(lines) + "\n"


def short_run_title(short):
    names = ", ".join(name for name in short if name != "sdpa")
    run = next(r for name, r in short.items() if name != "sdpa")["separate_run"]
    return (f"{names} under TRITON_INTERPRET=1 on a short run of its own beside sdpa "
            f"(preset {run['preset']}, batch {run['batch']} x block {run['block']}, {run['steps']} steps)")


def aligned(rows):
    rows = [TABLE_HEADER[:-1]] + [row[:-1] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]


def text_table(results):
    """The summary closing stdout. Skip reasons were printed before training: here only their names."""
    lines = aligned(table_rows(results))
    short = short_run_results(results)
    if short:
        lines += ["", short_run_title(short) + ":"] + aligned(table_rows(short, separate=True))
    failed = [(name, r) for name, r in results.items() if r.get("status") == "failed"]
    lines += [f"  failed {name}: {r.get('reason', '')}" for name, r in failed]
    skipped = [name for name, r in results.items() if r.get("status") == "skipped"]
    if skipped:
        lines.append(f" skipped {', '.join(skipped)} (reasons above and in results.md)")
    return "\n".join(lines)


def write_plots(report, out_dir):
    """The PNGs for what was measured (none for what was not); returns the names written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # a separate short run trained another configuration: its curves and bars would not compare
    ran = {name: r for name, r in report["variants"].items() if r.get("steps_done") and not r.get("separate_run")}
    separate = {name: r for name, r in report["variants"].items() if r.get("steps_done") and r.get("separate_run")}
    subtitle = f"{report['device']['name']}, preset {report['preset']}, batch {report['training']['batch']} x {report['training']['block']}"
    written = []
    if not ran:
        return written

    fig, (ax_train, ax_val) = plt.subplots(1, 2, figsize=(13, 4.8))
    # Variants that agree draw on top of each other: distinct dash patterns keep each visible.
    dashes = ["-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2)), (0, (8, 3))]
    for index, (name, r) in enumerate(ran.items()):
        style = dashes[index % len(dashes)]
        steps, losses = zip(*r["train_loss"])
        label = variant_label(name, r)
        line, = ax_train.plot(steps, losses, label=label, linewidth=1.2, alpha=0.85, linestyle=style)
        if r.get("val_loss"):
            vsteps, vlosses = zip(*r["val_loss"])
            ax_val.plot(vsteps, vlosses, marker="o", markersize=3, label=label, color=line.get_color(),
                        linestyle=style)
    for ax, title in ((ax_train, "train loss"), (ax_val, "val loss")):
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"nanoGPT loss per attention variant — {subtitle}")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "loss_curves.png"), dpi=120)
    plt.close(fig)
    written.append("loss_curves.png")

    for key, filename, label, scale in (("tokens_per_s", "tokens_per_s.png", "tokens / s", 1.0),
                                        ("peak_memory_bytes", "peak_memory.png", "peak memory (GiB)", 2**-30)):
        names = [n for n, r in ran.items() if r.get(key) is not None]
        if not names:
            continue
        fig, ax = plt.subplots(figsize=(8, 4.5))
        values = [ran[n][key] * scale for n in names]
        bars = ax.bar([variant_label(n, ran[n]).replace(" (", "\n(") for n in names], values, color="tab:blue")
        ax.bar_label(bars, labels=[f"{v:,.0f}" if scale == 1.0 else f"{v:.1f}" for v in values])
        notes = [f"{variant_label(n, r)}: {r[key] * scale:,.0f} {label} in Triton's interpreter on a short run "
                 "of its own (results.md)" for n, r in separate.items() if r.get(key) is not None]
        if notes:
            fig.text(0.01, 0.01, "\n".join(notes), fontsize=8, va="bottom")
        ax.set_ylabel(label)
        ax.set_title(f"{label} — {subtitle}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout(rect=(0, 0.04 * len(notes), 1, 1))
        fig.savefig(os.path.join(out_dir, filename), dpi=120)
        plt.close(fig)
        written.append(filename)
    return written


def write_report(report, out_dir, plots=True):
    relative_to_reference(report["variants"])
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "results.json")
    with open(path + ".tmp", "w") as f:
        json.dump(report, f, indent=1, default=str)
    os.replace(path + ".tmp", path)  # a reader never sees half a file, even if we are killed mid-write
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(markdown_report(report))
    return write_plots(report, out_dir) if plots else []
