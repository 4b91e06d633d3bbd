#!/opt/xf-venv/bin/python
"""Turn `xfc tune --report` JSON files into docs/tuning.md's results table and convergence plot.

Usage: test/bench/tuning_report.py REPORT.json [LONGER_REPORT.json] [--png docs/tuning-convergence.png]
                                    [--compare CMP.json [--noise NOISE.json]]

Prints a markdown table: per kernel the default and tuned cost (geometric mean over the tuned
lengths, anchored on the default as the tuner measures), the speedup, the roofline fraction,
Halide's autoschedulers when the run had --baselines, and per length the raw default and tuned
times from the final batch. The plot shows each kernel's best-so-far cost (relative to its
default) against seconds of tuning; with a second, longer run of the same model, one panel per
kernel with both runs.

Whether the shorter run's schedules are as good as the longer run's (the "within 5 %" question)
cannot be read from the two reports: each run's costs are anchored on its own first measurement
of the default, under its own load. Time them side by side with `xfc tune MODEL --db SHORT.db
--compare LONG.db --report CMP.json` and pass --compare CMP.json (A / B per kernel and length);
--noise takes the same for a database compared with itself (identical schedules: the noise).
"""
import argparse
import json
import math
import pathlib


def fmt(v):
    return f"{v:.3f}" if isinstance(v, (int, float)) else str(v).split(":")[0]


def table(report):
    base_names = ["Adams2019", "Li2018", "Mullapudi2016"]
    lines = ["| kernel | signature | trials | default ms | tuned ms | speedup | roofline | "
             + " | ".join(f"{n} ms" for n in base_names) + " | tuned / Adams2019 |",
             "|---|---|---|---|---|---|---|" + "---|" * len(base_names) + "---|"]
    for k in report["kernels"]:
        b = k.get("baselines", {})
        adams = b.get("Adams2019")
        tuned_again = b.get("xf_tuned", k["best_ms"])
        ratio = (f"{adams / tuned_again:.2f}×" if isinstance(adams, (int, float)) and
                 isinstance(tuned_again, (int, float)) else "–")
        lines.append(f"| {k['name']} | `{k['kernel']}` | {k['trials']} | {k['default_ms']:.3f} | "
                     f"{k['best_ms']:.3f} | {k['default_ms'] / k['best_ms']:.2f}× | "
                     f"{100 * k['roofline_fraction']:.0f} % | "
                     + " | ".join(fmt(b.get(n, "–")) for n in base_names) + f" | {ratio} |")
    cases = ["", "Per length (raw minimum wall time of the default and the tuned schedule, timed "
             "in one batch after the search):", "",
             "| kernel | rows | keys | default ms | tuned ms | default / tuned |", "|---|---|---|---|---|---|"]
    any_case = False
    for k in report["kernels"]:
        for c in k.get("cases", []):
            any_case = True
            cases.append(f"| {k['name']} | {c['rows']} | {c['keys'] or '–'} | {c['default_ms']:.4f} | "
                         f"{c['tuned_ms']:.4f} | {c['default_ms'] / c['tuned_ms']:.2f}× |")
    if any_case:
        lines += cases
    return "\n".join(lines)


def compare_table(cmp, noise=None, within=1.05):
    """`xfc tune --compare` reports: A / B per kernel (geometric mean over lengths) and per
    length (rows; a decode attention attends over the longest length's keys); with a noise
    report (a database against itself) its A / B beside."""
    def per_length(k):
        return {c["rows"]: c["a_ms"] / c["b_ms"] for c in k["cases"]}
    quiet = {k["kernel"]: k for k in noise["kernels"]} if noise else {}
    lengths = sorted({c["rows"] for k in cmp["kernels"] for c in k["cases"]})
    head = ("| kernel | A / B | " + " | ".join(f"ℓ = {r}" for r in lengths)
            + (" | noise: A / A | noise per length |" if noise else " |")
            + f" A / B ≤ {within:.2f} |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for k in cmp["kernels"]:
        per = per_length(k)
        row = f"| {k['name']} | {k['a_over_b']:.3f} | " + " | ".join(
            f"{per[r]:.3f}" if r in per else "–" for r in lengths)
        if noise:
            q = quiet.get(k["kernel"])
            qper = per_length(q) if q else {}
            row += (f" | {q['a_over_b']:.3f}" if q else " | –") + " | " + " / ".join(
                f"{qper[r]:.3f}" if r in qper else "–" for r in lengths)
        row += f" | {'yes' if k['a_over_b'] <= within else 'no'} |"
        lines.append(row)
    return "\n".join(lines)


def history(k, budget_s, kernels):
    """A kernel's best-so-far as (seconds, speedup over the default), extended to its share of
    the budget. History costs are the search's combined estimate: the product over the paths
    of (path default × path best / path default) ** (path's share of the lengths), over the
    paths searched so far; before the last path starts it lacks the later paths' defaults, so
    each point is divided by the scale of the paths searched by then (the paths run in order;
    a point belongs to the scale it is nearest to in log — the scales differ by the later
    paths' default times, far more than a best differs from its default)."""
    h = k.get("history", [])
    if not h:
        return [], []
    paths = k.get("paths") or []
    total = sum(len(p["lengths"]) for p in paths)
    if total and all(p.get("default_ms", 0) > 0 for p in paths):
        scales, log_s = [], 0.0
        for p in paths:
            log_s += len(p["lengths"]) / total * math.log(p["default_ms"])
            scales.append(math.exp(log_s))
    else:  # before paths: one search on all lengths, one scale
        scales = [k.get("history_default_ms", k["default_ms"])]
    ys, j = [], 0
    for _, c in h:
        while j + 1 < len(scales) and \
                abs(math.log(c / scales[j + 1])) < abs(math.log(c / scales[j])):
            j += 1
        ys.append(scales[j] / c)
    xs = [t for t, _ in h] + [max(h[-1][0], budget_s / kernels)]
    return xs, ys + [ys[-1]]


def plot_pair(short, longer, path):
    """One panel per kernel: both runs' best-so-far against seconds on that kernel."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return False
    ks = longer["kernels"]
    cols = 3
    rows = (len(ks) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    by_sig = {k["kernel"]: k for k in short["kernels"]}
    for ax, k in zip(axes.flat, ks):
        for run, kk, style in ((longer, k, "-"), (short, by_sig.get(k["kernel"]), "--")):
            if not kk:
                continue
            xs, ys = history(kk, run["budget_s"], len(run["kernels"]))
            ax.step(xs, ys, style, where="post",
                    label=f"{run['budget_s'] / 60:.0f} min ({kk['trials']} trials)")
        ax.axhline(1.0, color="k", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_title(k["name"], fontsize=9)
        ax.set_xlabel("seconds on this kernel", fontsize=8)
        ax.set_ylabel("speedup over the default", fontsize=8)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(ks):]:
        ax.axis("off")
    fig.suptitle(f"xfc tune: best so far (the search's estimate) against time, "
                 f"{longer['threads']} thread(s); FMA peak {longer['fma_gflops']:.0f} / "
                 f"{short['fma_gflops']:.0f} GFLOP/s", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def plot(report, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for k in report["kernels"]:
        xs, ys = history(k, report["budget_s"], len(report["kernels"]))
        if not xs:
            continue
        ax.step(xs, ys, where="post", label=f"{k['name']} ({k['trials']} trials)")
    ax.set_xlabel("seconds of tuning on this kernel")
    ax.set_ylabel("best so far: speedup over the default schedule")
    ax.set_title(f"xfc tune, budget {report['budget_s'] / 60:.0f} min, {report['threads']} threads; "
                 f"FMA peak {report['fma_gflops']:.0f} GFLOP/s", fontsize=9)
    ax.axhline(1.0, color="k", lw=0.8, ls=":")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report")
    p.add_argument("longer", nargs="?")
    p.add_argument("--png")
    p.add_argument("--compare", help="`xfc tune --compare` report (A / B per kernel and length)")
    p.add_argument("--noise", help="the same for a database compared with itself")
    a = p.parse_args()
    load = lambda f: json.loads(pathlib.Path(f).read_text())  # noqa: E731
    report = load(a.report)
    longer = load(a.longer) if a.longer else None
    print(table(report))
    if a.compare:
        print()
        print(compare_table(load(a.compare), load(a.noise) if a.noise else None))
    if a.png and (plot_pair(report, longer, a.png) if longer else plot(report, a.png)):
        print(f"\n![best so far against time]({pathlib.Path(a.png).name})")


if __name__ == "__main__":
    main()
