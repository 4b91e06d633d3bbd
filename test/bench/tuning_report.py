#!/opt/xf-venv/bin/python
"""Turn `xfc tune --report` JSON files into docs/tuning.md's results table and convergence plot.

Usage: test/bench/tuning_report.py REPORT.json [LONGER_REPORT.json] [--png docs/tuning-convergence.png]

Prints a markdown table: per kernel the default and tuned cost (geometric mean over the tuned
lengths, anchored on the default as the tuner measures), the speedup, the roofline fraction,
Halide's autoschedulers when the run had --baselines, and per length the raw default and tuned
times from the baselines batch. With a second, longer run of the same model, also how far the
first run's best is from the longer run's best (the "within 5 %" question). The plot shows each
kernel's best-so-far cost (relative to its default) against seconds of tuning.
"""
import argparse
import json
import pathlib


def fmt(v):
    return f"{v:.3f}" if isinstance(v, (int, float)) else str(v).split(":")[0]


def table(report, longer=None):
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
    if longer:
        best = {k["kernel"]: k["best_ms"] for k in longer["kernels"]}
        lines += ["", f"Against a {longer['budget_s'] / 60:.0f}-minute run (its best / this run's "
                  "best; 1.00 means this run found as good a schedule):", "",
                  "| kernel | this run ms | longer run ms | ratio |", "|---|---|---|---|"]
        for k in report["kernels"]:
            if k["kernel"] in best:
                lines.append(f"| {k['name']} | {k['best_ms']:.3f} | {best[k['kernel']]:.3f} | "
                             f"{best[k['kernel']] / k['best_ms']:.3f} |")
    return "\n".join(lines)


def plot(report, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for k in report["kernels"]:
        h = k.get("history", [])
        if not h:
            continue
        # History costs are on the search's scale (its estimate of the default,
        # history_default_ms, when the paths are searched apart; default_ms before).
        d = k.get("history_default_ms", k["default_ms"])
        xs = [t for t, _ in h] + [report["budget_s"] / len(report["kernels"])]
        ys = [d / c for _, c in h] + [d / h[-1][1]]
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
    a = p.parse_args()
    report = json.loads(pathlib.Path(a.report).read_text())
    longer = json.loads(pathlib.Path(a.longer).read_text()) if a.longer else None
    print(table(report, longer))
    if a.png and plot(report, a.png):
        print(f"\n![best so far against time]({pathlib.Path(a.png).name})")


if __name__ == "__main__":
    main()
