#!/opt/xf-venv/bin/python
"""Run xf-bench-gemm, print a table, and update the GEMM section of docs/bench.md.

Usage: test/bench/run_gemm.py [--build DIR] [--rounds N] [--threads N] [--no-docs]

Sets OPENBLAS_CORETYPE from the CPU (SKYLAKEX for any AVX-512 CPU: Debian's
OpenBLAS 0.3.21 has no Zen 4 / Sapphire Rapids kernels and would otherwise fall
back to an older one), OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / HL_NUM_THREADS
to --threads. Writes docs/bench-gemm.png when matplotlib is installed.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
BEGIN = "<!-- BEGIN xf-bench-gemm (written by test/bench/run_gemm.py) -->"
END = "<!-- END xf-bench-gemm -->"


def openblas_coretype():
    flags = pathlib.Path("/proc/cpuinfo").read_text()
    if " avx512f" in flags:
        return "SKYLAKEX"
    return "HASWELL" if " avx2" in flags else "PRESCOTT"


def run(build, rounds, threads):
    env = dict(os.environ)
    env.pop("OPENBLAS_L2_SIZE", None)
    env.update(OPENBLAS_CORETYPE=openblas_coretype(), OPENBLAS_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads), HL_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "gemm.json"
        subprocess.run([str(build / "bin" / "xf-bench-gemm"), "--rounds", str(rounds),
                        "--threads", str(threads), "--json", str(out)], env=env, check=True)
        data = json.loads(out.read_text())
    data["openblas_coretype"] = env["OPENBLAS_CORETYPE"]
    return data


def table(data):
    rows = {}
    for r in data["shapes"]:
        rows.setdefault(r["shape"], {"r": r})[r["variant"]] = r
    variants = [v for v in ("xf", "openblas", "onednn") if any(v in x for x in rows.values())]
    head = ("| shape | M×K×N | " + " | ".join(f"{v} GF/s best (median)" for v in variants)
            + " | xf / OpenBLAS (best) | xf % of peak |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, row in rows.items():
        r = row["r"]
        dims = f"{r['M']}×{r['K']}×{r['N']}" + (" (Wᵀ)" if r["transposed"] else "")
        cells = [f"{row[v]['gflops_best']:.1f} ({row[v]['gflops_median']:.1f})" for v in variants]
        ratio = row["xf"]["gflops_best"] / row["openblas"]["gflops_best"]
        pct = 100 * row["xf"]["gflops_best"] / data["peak_gflops"]
        lines.append(f"| {name} | {dims} | " + " | ".join(cells) + f" | {ratio:.2f} | {pct:.0f}% |")
    return "\n".join(lines), rows, variants


def plot(rows, variants, data, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = list(rows)
    width = 0.8 / len(variants)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for i, v in enumerate(variants):
        ax.bar([x + i * width for x in range(len(names))],
               [rows[n][v]["gflops_best"] for n in names], width, label=v)
    ax.axhline(data["peak_gflops"], color="k", ls="--", lw=1, label="measured FMA peak")
    ax.set_xticks([x + width * (len(variants) - 1) / 2 for x in range(len(names))])
    ax.set_xticklabels(names, rotation=20, ha="right")
    ax.set_ylabel("GFLOP/s (best round)")
    ax.set_title(f"fp32 GEMM, {data['threads']} threads, {data['cpu']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-docs", action="store_true")
    args = p.parse_args()
    data = run(pathlib.Path(args.build), args.rounds, args.threads)
    text, rows, variants = table(data)
    print()
    print(text)
    if args.no_docs:
        return 0
    png = ROOT / "docs" / "bench-gemm.png"
    has_plot = plot(rows, variants, data, png)
    section = "\n".join([
        BEGIN,
        f"Machine: **{data['cpu']}**, {data['threads']} threads; flags: {data['flags']}.",
        f"Measured in the same run: FMA peak **{data['peak_gflops']:.0f} GFLOP/s** "
        f"({data['fma_isa']}), read bandwidth **{data['read_gbs']:.1f} GB/s**. "
        f"OpenBLAS with OPENBLAS_CORETYPE={data['openblas_coretype']}; "
        f"{data['rounds']} interleaved rounds, best round and median of rounds.",
        "",
        text,
        "",
        "![GEMM GFLOP/s](bench-gemm.png)" if has_plot else "(matplotlib missing: no plot)",
        END,
    ])
    doc = ROOT / "docs" / "bench.md"
    current = doc.read_text() if doc.exists() else "# Benchmarks\n"
    if BEGIN in current and END in current:
        before, rest = current.split(BEGIN, 1)
        current = before + section + rest.split(END, 1)[1]
    else:
        current = current.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(current)
    print(f"\nupdated {doc.relative_to(ROOT)}" + (f" and {png.relative_to(ROOT)}" if has_plot else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
