#!/opt/xf-venv/bin/python
"""Run xf-bench-gemm, print a table, and update the GEMM section of docs/bench.md.

Usage: test/bench/run_gemm.py [--build DIR] [--rounds N] [--threads N] [--no-docs]
                             [--tuning-db DB]

--tuning-db reconfigures the build with -DXF_BENCH_TUNING_DB=DB (and the threads) and rebuilds
xf-bench-gemm, so that its "xf tuned" kernels take the database's schedules for kernels of the
same K, N, layout and dtypes (kernels/tuned.json in the build says which got one); without it
the tuned column is whatever the build was last configured with (default schedules: no DB).

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

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from benchlib import cpu_model, replace_doc_section  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BEGIN = "<!-- BEGIN xf-bench-gemm (written by test/bench/run_gemm.py) -->"
END = "<!-- END xf-bench-gemm -->"


def openblas_coretype():
    flags = pathlib.Path("/proc/cpuinfo").read_text()
    if " avx512f" in flags:
        return "SKYLAKEX"
    return "HASWELL" if " avx2" in flags else "PRESCOTT"


def run(build, rounds, threads, warm_weights):
    env = dict(os.environ)
    env.pop("OPENBLAS_L2_SIZE", None)
    env.update(OPENBLAS_CORETYPE=openblas_coretype(), OPENBLAS_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads), HL_NUM_THREADS=str(threads))
    load_before = f"{os.getloadavg()[0]:.1f}"
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "gemm.json"
        subprocess.run([str(build / "bin" / "xf-bench-gemm"), "--rounds", str(rounds),
                        "--threads", str(threads), "--json", str(out)]
                       + ([] if warm_weights else ["--cold-weights"]), env=env, check=True)
        data = json.loads(out.read_text())
    data["warm_weights"] = warm_weights
    data["openblas_coretype"] = env["OPENBLAS_CORETYPE"]
    data["cpu"] = cpu_model()
    data["load_before"], data["load_after"] = load_before, f"{os.getloadavg()[0]:.1f}"
    return data


VARIANTS = ("xf", "xf_packed", "xf_tuned", "xf_bf16", "xf_bf16_packed", "xf_bf16_amx", "xf_q8_q4_1",
            "xf_q8_q4_1_amx", "openblas", "openblas_sgemv", "openblas_sbgemm", "onednn")
LABELS = {"xf": "xf (packed per call)", "xf_packed": "xf (packed at load)", "xf_tuned": "xf tuned",
          "xf_bf16": "xf bf16 (packed per call)", "xf_bf16_packed": "xf bf16 (packed at load)",
          "xf_bf16_amx": "xf bf16 (AMX tiles)",
          "openblas": "OpenBLAS sgemm",
          "openblas_sgemv": "OpenBLAS sgemv", "openblas_sbgemm": "OpenBLAS sbgemm",
          "onednn": "oneDNN sgemm", "xf_q8_q4_1": "xf q8 · Q4_1 (VNNI)",
          "xf_q8_q4_1_amx": "xf q8 · Q4_1 (AMX)"}


def collect(data, decode):
    rows = {}
    for r in data["shapes"]:
        if (r["M"] <= 4) == decode:
            rows.setdefault(r["shape"], {"r": r})[r["variant"]] = r
    variants = [v for v in VARIANTS if any(v in x for x in rows.values())]
    return rows, variants


def runs(row):
    """The fp32 and bf16 xf kernels executables use: weights packed at load when the bench has
    them (xfc's default), else packed per call."""
    return row.get("xf_packed", row["xf"]), row.get("xf_bf16_packed", row.get("xf_bf16"))


def dims(r):
    return f"{r['M']}×{r['K']}×{r['N']}" + (" (Wᵀ)" if r["transposed"] else "")


def prefill_table(data):
    """GFLOP/s for M > 4 (GEMM path)."""
    rows, variants = collect(data, decode=False)
    head = ("| shape | M×K×N | " + " | ".join(f"{LABELS[v]} GF/s best (median)" for v in variants)
            + " | xf / OpenBLAS (best) | xf % of peak | xf bf16 % of bf16 peak"
            " | xf q8 % of int8 peak |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, row in rows.items():
        cells = [f"{row[v]['gflops_best']:.1f} ({row[v]['gflops_median']:.1f})" if v in row else "–"
                 for v in variants]
        xf, xf16 = runs(row)
        ratio = xf["gflops_best"] / row["openblas"]["gflops_best"]
        pct = 100 * xf["gflops_best"] / data["peak_gflops"]
        # The bf16 dot-product peak where this run measured one (older JSON: twice fp32).
        peak16 = data.get("bf16_peak_gflops") or 2 * data["peak_gflops"]
        pct16 = f"{100 * xf16['gflops_best'] / peak16:.0f}%" if xf16 else "–"
        # The int8 path against the vpdpbusd peak (AMX's tiles, where they ran, exceed it).
        q8 = row.get("xf_q8_q4_1")
        pct8 = (f"{100 * q8['gflops_best'] / data['int8_peak_gops']:.0f}%"
                if q8 and data.get("int8_peak_gops") else "–")
        lines.append(f"| {name} | {dims(row['r'])} | " + " | ".join(cells)
                     + f" | {ratio:.2f} | {pct:.0f}% | {pct16} | {pct8} |")
    return "\n".join(lines), rows, variants


def decode_table(data):
    """GB/s (bytes of the weight as stored + x + out) for M <= 4 (GEMV path)."""
    rows, variants = collect(data, decode=True)
    head = ("| shape | M×K×N | " + " | ".join(f"{LABELS[v]} GB/s best (median)" for v in variants)
            + " | xf / sgemv (time, best) | xf % of read bw | xf bf16 ms / xf ms |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, row in rows.items():
        cells = [f"{row[v]['gbs_best']:.1f} ({row[v]['gbs_median']:.1f})" if v in row else "–"
                 for v in variants]
        xf, xf16 = runs(row)
        blas = row.get("openblas_sgemv", row["openblas"])
        speed = blas["min_s"] / xf["min_s"]
        pct = 100 * xf["gbs_best"] / data["read_gbs"]
        bf = f"{xf16['min_s'] / xf['min_s']:.2f}" if xf16 else "–"
        lines.append(f"| {name} | {dims(row['r'])} | " + " | ".join(cells)
                     + f" | {speed:.2f} | {pct:.0f}% | {bf} |")
    return "\n".join(lines), rows, variants


def plot(prefill, decode, data, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(15, 4.8), gridspec_kw={"width_ratios": [6, 5]})
    for ax, (rows, variants), key, ylabel, ceiling, ceiling_label in (
            (axes[0], prefill, "gflops_best", "GFLOP/s (best round)", data["peak_gflops"],
             "measured fp32 FMA peak"),
            (axes[1], decode, "gbs_best", "GB/s of weight read (best round)", data["read_gbs"],
             "measured read bandwidth")):
        names = list(rows)
        width = 0.8 / max(len(variants), 1)
        for i, v in enumerate(variants):
            ax.bar([x + i * width for x in range(len(names))],
                   [rows[n][v][key] if v in rows[n] else 0 for n in names], width, label=LABELS[v])
        ax.axhline(ceiling, color="k", ls="--", lw=1, label=ceiling_label)
        ax.set_xticks([x + width * (len(variants) - 1) / 2 for x in range(len(names))])
        ax.set_xticklabels(names, rotation=20, ha="right")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    axes[0].set_title(f"GEMM (ℓ = 128 and 1024³), {data['threads']} threads, {data['cpu']}")
    axes[1].set_title("decode GEMV (M = 1), weights streamed from DRAM")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-docs", action="store_true")
    p.add_argument("--tuning-db", help="tuning database for the tuned column (rebuilds the bench)")
    p.add_argument("--warm-weights", action="store_true",
                   help="prefill shapes reuse one copy of the weight (it stays in L3) instead of "
                        "reading it from DRAM every call as a model does")
    args = p.parse_args()
    build = pathlib.Path(args.build)
    if args.tuning_db:
        subprocess.run(["/opt/xf-venv/bin/cmake", "-S", str(ROOT), "-B", str(build),
                        f"-DXF_BENCH_TUNING_DB={pathlib.Path(args.tuning_db).resolve()}",
                        f"-DXF_BENCH_TUNING_THREADS={args.threads}"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["ninja", "-C", str(build), "xf-bench-gemm"], check=True)
    tuned_json = build / "test" / "bench" / "kernels" / "tuned.json"
    tuned_as = ({t["shape"]: t["tuned_as"] for t in json.loads(tuned_json.read_text())}
                if tuned_json.exists() else {})
    data = run(build, args.rounds, args.threads, args.warm_weights)
    ptext, prows, pvars = prefill_table(data)
    dtext, drows, dvars = decode_table(data)
    print()
    print(ptext)
    print()
    print(dtext)
    if args.no_docs:
        return 0
    png = ROOT / "docs" / "bench-gemm.png"
    has_plot = plot((prows, pvars), (drows, dvars), data, png)
    section = "\n".join([
        BEGIN,
        f"Machine: **{data['cpu']}**, {data['threads']} threads; flags: {data['flags']}.",
        f"Measured in the same run: FMA peak **{data['peak_gflops']:.0f} GFLOP/s** "
        f"({data['fma_isa']}; the highest of the readings before each shape)"
        + (f", bf16 dot-product peak **{data['bf16_peak_gflops']:.0f} GFLOP/s** (vdpbf16ps)"
           if data.get("bf16_peak_gflops") else "")
        + (f", int8 dot-product peak **{data['int8_peak_gops']:.0f} GOP/s** (vpdpbusd)"
           if data.get("int8_peak_gops") else "")
        + ("; AMX int8 tiles usable" if data.get("amx_int8") else "; no AMX int8 (the AMX int8 "
           "column is left out)")
        + (f"; AMX bf16 tiles usable, peak **{data['amx_bf16_peak_gflops']:.0f} GFLOP/s** "
           "(tdpbf16ps)" if data.get("amx_bf16") else "; no AMX bf16 (the AMX bf16 column is "
           "left out)")
        + f", read bandwidth **{data['read_gbs']:.1f} GB/s**; "
        f"load average before the run {data.get('load_before', '?')}, after "
        f"{data.get('load_after', '?')}. "
        f"OpenBLAS with OPENBLAS_CORETYPE={data['openblas_coretype']}; "
        f"{data['rounds']} interleaved rounds, best round and median of rounds. "
        "*xf (packed at load)* is what xfc's executables run: the weight packed once, "
        "tile-major, by the kernel's `_pack` (outside the timed calls); *packed per call* is "
        "`--pack-weights=call`. The ratio and %-of-peak columns use the kernels packed at load. "
        "*xf bf16*: bfloat16 weights (`bf16Weights`); for the GEMMs also bf16 activations "
        "(`bf16Activations`, vdpbf16ps), for the GEMVs float32 activations. "
        "*xf bf16 (AMX tiles)*, only where the process may use AMX bf16: `xfrt_amx_bf16_gemm` "
        "on the same packed bf16 weight, as executables call it for the rows they round. "
        "*xf q8 · Q4_1*: the `--q8-gemm-inputs` path on a weight in ggml Q4_1 blocks (random "
        "blocks; SmolLM2's matrices are Q4_1), x rounded to Q8_0 per call, 8-bit products "
        "(`xfrt_block_gemm` on AVX-512 VNNI, or on AMX int8 tiles where the process may use "
        "them; `xfrt_block_gemv` for decode), GOP/s counted as 2·M·K·N and read against the "
        "int8 peak; its bytes are the blocks'. "
        "OpenBLAS sbgemm appears only when the installed OpenBLAS exports it. "
        "*xf tuned*: the schedule a tuning database (`xfc tune`) holds for a kernel of the same "
        "K, N, layout and dtypes, tuned with its fused epilogue"
        + (" — shapes with an entry: " + ", ".join(f"{k} (`{v}`)" for k, v in tuned_as.items()
                                                if v) if any(tuned_as.values())
           else " — no database this run, so the default schedule") + ".",
        "",
        "GEMMs (GFLOP/s; xf % of the fp32 FMA peak, xf bf16 % of the bf16 dot-product peak, "
        "xf q8 % of the int8 dot-product peak; "
        + ("one copy of each weight, which stays in L3 (`--warm-weights`)):" if data["warm_weights"]
           else "the weights rotate over ≥ 96 MiB of copies, so every call reads its weight from "
                "DRAM, as a model's forward does):"),
        "",
        ptext,
        "",
        "Decode GEMVs (GB/s = bytes of the weight as stored, plus x and out, per second; "
        "the weights rotate over ≥ 96 MiB of copies so every call reads them from DRAM):",
        "",
        dtext,
        "",
        "![GEMM GFLOP/s and GEMV GB/s](bench-gemm.png)" if has_plot
        else "(matplotlib missing: no plot)",
        END,
    ])
    doc = replace_doc_section(BEGIN, END, section)
    print(f"\nupdated {doc.relative_to(ROOT)}" + (f" and {png.relative_to(ROOT)}" if has_plot else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
