#!/usr/bin/env python3
"""Read what a GPU machine sent back from test/gpu/replay.sh (docs/gpu.md): correctness against
the bundle's references, then the numbers the GPU issues ask for — prefill and decode times,
kernel launches per forward / decode step (--profile), the slowest kernels by ncu's GPU time
with their grids, and PyTorch's times on the same GPU.

usage: compare_bundle.py BUNDLE RESULTS [--dry-run] [--json summary.json]
                         [--xfc build/bin/xfc --tuning-db gpu.db]
  RESULTS: the results.tar.gz that came back, or a directory holding it or its out/
  --dry-run: results of `replay.sh --dry-run` (the stand-in driver: no kernel ran), so only
             that every run exited 0 and wrote its output with the reference's shape
  --xfc, --tuning-db: import the tune phase's out/gpu-times.json into that database (xfc tune
             --import: entries keyed by the GPU's name and capability; docs/tuning.md)
Exit status 1 when a check fails.
"""

import argparse
import collections
import csv
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

TIMES = re.compile(r"min ([0-9.]+) ms median ([0-9.]+) ms")
DECODE = re.compile(r"decode (\d+) tokens in ([0-9.]+) ms \(([0-9.]+) ms/token")
# Both forms' tokens/s: one sequence "(0.139 ms/token, 7218.8 tokens/s)", several decoding
# together "(1806.7 tokens/s)".
TOKENS_PER_S = re.compile(r"decode \d+ tokens in [0-9.]+ ms \((?:[0-9.]+ ms/token, )?"
                          r"([0-9.]+) tokens/s\)")
LAUNCHES = re.compile(r"kernel launches: (\S+): (\d+) calls?, (\d+)(?:-(\d+))? launches a call")
RUN = re.compile(r"^### (\S+) rc=(\d+) ms=(\d+)", re.M)


def results_dir(path, scratch):
    if os.path.isdir(os.path.join(path, "out")):
        return os.path.join(path, "out")
    tar = path if path.endswith(".tar.gz") else os.path.join(path, "results.tar.gz")
    with tarfile.open(tar) as t:
        t.extractall(scratch)
    return os.path.join(scratch, "out")


def read(path):
    return open(path).read() if os.path.exists(path) else None


def correctness(bundle, out, exits, dry_run):
    lines, failures = [], 0
    for case in json.load(open(os.path.join(bundle, "cases.json"))):
        label = case["label"]
        rc = exits.get(label)
        stderr = (read(os.path.join(out, label + ".stderr")) or "").strip()
        ok = False
        if rc != 0:
            verdict = "NOT RUN" if rc is None else f"EXIT {rc}: {stderr[-200:]}"
        elif case["kind"] == "jsonids":  # --batch-file's JSON lines: each line's ids
            got = [json.loads(x)["ids"] for x in
                   (read(os.path.join(out, label + ".stdout")) or "").splitlines() if x.strip()]
            want = [json.loads(x)["ids"] for x in
                    open(os.path.join(bundle, "ref", label + ".stdout")).read().splitlines()
                    if x.strip()]
            same = sum(a == b for a, b in zip(got, want))
            ok = len(got) == len(want) and (dry_run or same == len(want))
            verdict = f"ran ({len(got)} sequences)" if dry_run else \
                f"{same} of {len(want)} sequences' ids equal" + ("" if ok else " FAIL")
        elif case["kind"] == "serve":  # serve_clients.py's summaries: ids per request
            path = os.path.join(out, label + ".json")
            got = json.load(open(path)) if os.path.exists(path) else {}
            want = json.load(open(os.path.join(bundle, "ref", label + ".json")))
            key = lambda r: (r["client"], r["request"])  # noqa: E731
            mine = {key(r): r.get("ids") for r in got.get("results", [])}
            same = sum(mine.get(key(r)) == r["ids"] for r in want["results"])
            complete = bool(got.get("all_ok")) and got.get("server_exit") == 0
            ok = complete and (dry_run or same == len(want["results"]))
            asked = len(want["results"])
            verdict = ("ran" if dry_run else f"{same} of {asked} requests equal") + \
                f", {got.get('tokens', 0)} tokens, {got.get('tokens_per_s') or 0:.0f} tokens/s" + \
                ("" if ok else " FAIL")
        elif case["kind"] == "ids":
            got = (read(os.path.join(out, label + ".stdout")) or "").strip()
            want = open(os.path.join(bundle, "ref", label + ".stdout")).read().strip()
            ok = dry_run or got == want
            verdict = "ran" if dry_run else "equal ids" if ok else \
                f"DIFFER cpu={want[:50]!r} gpu={got[:50]!r}"
        else:
            path = os.path.join(out, label + ".npy")
            want = np.load(os.path.join(bundle, "ref", label + ".npy"))
            got = np.load(path) if os.path.exists(path) else None
            if got is None or got.shape != want.shape:
                verdict = "NO OUTPUT" if got is None else f"SHAPE {got.shape} vs {want.shape}"
            elif dry_run:
                ok, verdict = True, "ran"
            else:
                error = float(np.max(np.abs(got.astype(np.float64) - want)) / np.max(np.abs(want)))
                ok = error <= case["tol"]
                verdict = f"{error:.2e} {'ok' if ok else 'FAIL'} (bound {case['tol']:g}, " \
                          f"{case['kind']})"
        failures += not ok
        lines.append(f"  {label:28s} {verdict}")
    return lines, failures


def timings(out):
    rows = {}
    for name in sorted(os.listdir(out)):
        if not name.startswith(("time-", "profile-")) or not name.endswith(".stderr"):
            continue
        text = open(os.path.join(out, name)).read()
        label = name[:-len(".stderr")]
        row = {}
        if m := TIMES.search(text):
            row["min_ms"], row["median_ms"] = float(m[1]), float(m[2])
        if m := DECODE.search(text):
            row["decode_ms_per_token"] = float(m[3])
        if m := TOKENS_PER_S.search(text):
            row["decode_tokens_per_s"] = float(m[1])
        for m in LAUNCHES.finditer(text):
            row[f"launches/{m[1]}"] = f"{m[3]}" + (f"-{m[4]}" if m[4] else "")
        if row:
            rows[label] = row
    return rows


def ncu_kernels(text):
    """Per kernel name: launches, total GPU µs, grids seen (from `ncu --csv`)."""
    start = text.find('"ID"')
    if start < 0:
        return None
    kernels = collections.defaultdict(lambda: {"launches": set(), "us": 0.0, "grids": set()})
    for row in csv.DictReader(io.StringIO(text[start:])):
        k = kernels[row["Kernel Name"]]
        k["launches"].add(row["ID"])
        value = float(row["Metric Value"].replace(",", "") or 0)
        if row["Metric Name"] == "gpu__time_duration.sum":
            scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(row["Metric Unit"], 1.0)
            k["us"] += value * scale
        elif row["Metric Name"] == "launch__grid_size":
            k["grids"].add(int(value))
    return {name: {"launches": len(k["launches"]), "us": round(k["us"], 2),
                   "grids": sorted(k["grids"])} for name, k in kernels.items()}


def ncu_sections(text):
    """Per kernel name: the mean of each percentage metric of `ncu --csv --section ...`
    (speed of light, occupancy) and the mean duration in µs, over its launches."""
    start = text.find('"ID"')
    if start < 0:
        return None
    sums = collections.defaultdict(lambda: collections.defaultdict(list))
    for row in csv.DictReader(io.StringIO(text[start:])):
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            continue
        unit, metric = row["Metric Unit"], row["Metric Name"]
        if unit == "%":
            sums[row["Kernel Name"]][metric].append(value)
        elif metric == "Duration":
            scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(unit)
            if scale:
                sums[row["Kernel Name"]]["Duration (µs)"].append(value * scale)
    return {name: {m: round(sum(v) / len(v), 1) for m, v in metrics.items()}
            for name, metrics in sums.items()}


def versus(xf, torch):
    """xf's prefill and decode times beside PyTorch's for the same model and length."""
    def best(*path):
        value = torch
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value.get("best_ms") if isinstance(value, dict) else value
    rows = []
    # gpt2-tc-*: the tensor-core builds (fp32 weights) beside PyTorch fp32 (TF32 off) and bf16.
    for model in ("gpt2", "gpt2-bf16", "llama", "gpt2-tc-tf32", "gpt2-tc-bf16"):
        anchor = "llama" if model == "llama" else "gpt2"
        dtype = "bf16" if model.endswith("bf16") else "fp32"
        for n in (128, 1024):
            ours = xf.get(f"time-{model}-prefill{n}", {}).get("min_ms")
            for name in (f"{anchor}_eager_{dtype}", f"{anchor}_compile_{dtype}"):
                theirs = best(name, f"prefill_{n}")
                if ours and theirs:
                    rows.append(f"{model} prefill {n}: xf {ours:.3f}, {name} {theirs:.3f} "
                                f"(xf {theirs / ours:.2f}x as fast)")
        ours = xf.get(f"time-{model}-decode", {}).get("decode_ms_per_token")
        for name, key in ((f"{anchor}_eager_{dtype}", "decode_loop_ms_per_token"),
                          (f"{anchor}_generate_static_{dtype}", "decode_ms_per_token"),
                          (f"{anchor}_compile_{dtype}", "decode_loop_ms_per_token")):
            theirs = best(name, key)
            if ours and theirs:
                rows.append(f"{model} decode ms/token: xf {ours:.3f}, {name} {theirs:.3f} "
                            f"(xf {theirs / ours:.2f}x as fast)")
    return rows or ["(no pairs: a side did not run)"]


def with_and_without(xf, pairs):
    """Each (what, with, without, how) pair of --repeat runs: both minima and their ratio."""
    rows = []
    for what, on, off, how in pairs:
        a, b = xf.get(on, {}).get("min_ms"), xf.get(off, {}).get("min_ms")
        if a and b:
            rows.append(f"{what}: {a:.3f} ms {how}, {b:.3f} ms without ({b / a:.2f}x)")
    return rows


def split_k(xf):
    """Split-K's effect (docs/gpu.md, "Split-K"): GPT-2 small's tensor-core prefill at ℓ = 128
    with split-K as the launcher chooses it and with XF_TENSOR_CORE_SPLIT_K=1."""
    return with_and_without(xf, [(f"gpt2 {p} prefill 128", f"time-gpt2-tc-{p}-prefill128",
                                  f"time-gpt2-tc-{p}-prefill128-nosplit", "split-K")
                                 for p in ("tf32", "bf16")])


def wide_tiles(xf):
    """The tensor-core GEMMs' tiles (docs/gpu.md, "Wide tiles"): GPT-2 small's prefill at
    ℓ = 1024 as the launcher picks them (128 × 128 where that grid fills the GPU) against every
    GEMM forced to 64-row and to 128-row tiles (XF_GEMM_TILE_ROWS)."""
    return with_and_without(xf, [(f"gpt2 {p} prefill 1024", f"time-gpt2-tc-{p}-prefill1024",
                                  f"time-gpt2-tc-{p}-prefill1024-tiles{rows}",
                                  f"with the launcher's tiles, not {rows}-row ones")
                                 for p in ("tf32", "bf16") for rows in (64, 128)])


def wgmma(xf):
    """The sm_90a wgmma GEMMs (docs/gpu.md, "Warpgroup GEMM (sm_90a)"): GPT-2 small's prefill
    at ℓ = 1024 with bf16 weights and products, with them where the launcher picks them and with
    XF_WGMMA=off (mma.sync only)."""
    return with_and_without(xf, [("gpt2 bf16 weights, bf16 prefill 1024",
                                  "time-gpt2-bf16w-tc-bf16-prefill1024",
                                  "time-gpt2-bf16w-tc-bf16-prefill1024-nowgmma", "with wgmma")])


def prefill_graphs(xf):
    """CUDA graphs' effect on a repeated forward (docs/gpu.md, "CUDA graphs"): ℓ = 128 with
    graphs (the default) and with --cuda-graphs off."""
    suffix = "-prefill128-nographs"
    return with_and_without(xf, [(f"{label[5:-len(suffix)]} prefill 128",
                                  label[:-len("-nographs")], label, "as CUDA graphs")
                                 for label in xf if label.endswith(suffix)])


def fma_kernels(xf):
    """The fp32 FMA kernels (docs/gpu.md, "GEMM, fp32: the FMA kernel", "Attention, fp32: the
    FMA kernel") against Halide's pipelines (XF_MLIR_GEMM=off, XF_MLIR_ATTENTION=off), and the
    attention's blocks as the launcher picks them against 64-query blocks
    (XF_ATTENTION_BLOCK_QUERIES=64): GPT-2 small's prefill at ℓ = 128 and 1024; and at 1024 the
    GEMMs' tiles as the launcher picks them against 64- and 128-row ones (XF_GEMM_TILE_ROWS)."""
    return with_and_without(xf, [(f"gpt2 prefill {n}", f"time-gpt2-prefill{n}",
                                  f"time-gpt2-prefill{n}-halide-{what}",
                                  f"with the FMA {what}")
                                 for what in ("attention", "gemm") for n in (128, 1024)] +
                            [(f"gpt2 prefill {n}", f"time-gpt2-prefill{n}",
                              f"time-gpt2-prefill{n}-attention64",
                              "with the launcher's attention blocks (16 / 32 queries), not 64")
                             for n in (128, 1024)] +
                            [("gpt2 prefill 1024", "time-gpt2-prefill1024",
                              f"time-gpt2-prefill1024-tiles{rows}",
                              f"with the launcher's GEMM tiles, not {rows}-row ones")
                             for rows in (64, 128)])


def batch_targets(xf, out):
    """The issue's batch targets from the batch phase: 8 sequences' decode tokens/s over one
    sequence's (≥ 6×), --serve's aggregate tokens/s with 16 clients (≥ 3,000)."""
    rows = []
    one = xf.get("time-gpt2-batch1", {}).get("decode_tokens_per_s")
    eight = xf.get("time-gpt2-batch8", {}).get("decode_tokens_per_s")
    if one and eight:
        rows.append(f"decode tokens/s: 1 sequence {one:.0f}, 8 together {eight:.0f}: "
                    f"{eight / one:.2f}x (target >= 6x)")
    path = os.path.join(out, "serve-gpt2-16.json")
    if os.path.exists(path):
        s = json.load(open(path))
        rows.append(f"--serve, {s['clients']} clients: {s['tokens']} tokens in "
                    f"{s['seconds']:.2f} s, {s['tokens_per_s'] or 0:.0f} tokens/s "
                    f"(target >= 3000; all answered: {s['all_ok']})")
    return rows


def gpu_tuning(out, xfc, db):
    """The tune phase's times: what was timed, and with --xfc/--tuning-db their import."""
    path = os.path.join(out, "gpu-times.json")
    if not os.path.exists(path):
        return ["no out/gpu-times.json (the tune phase did not run)"], None
    times = json.load(open(path))
    kernels = times.get("kernels", [])
    rows = [f"{len(kernels)} kernels timed on {times['gpu']['name']} ({times['gpu']['capability']}) "
            f"at lengths {times['lengths']}"]
    for k in kernels:
        rows.append(f"{k['name']:12s} {len(k['candidates'])} candidates, finalist {k['finalist']}, "
                    f"{len(k['final_check'])} final-check batches {k['error']}")
    if not (xfc and db):
        rows.append("import: xfc tune --import out/gpu-times.json --db DB")
        return rows, None
    r = subprocess.run([xfc, "tune", "--import", path, "--db", db], capture_output=True, text=True)
    rows += r.stderr.rstrip().splitlines()
    return rows, r.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle")
    ap.add_argument("results")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--xfc", help="imports the tune phase's times into --tuning-db")
    ap.add_argument("--tuning-db")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = results_dir(args.results, scratch)
        log = read(os.path.join(out, "log.txt")) or ""
        exits = {m[1]: int(m[2]) for m in RUN.finditer(log)}
        print("correctness" + (" (dry run: exits and shapes only)" if args.dry_run else ""))
        lines, failures = correctness(args.bundle, out, exits, args.dry_run)
        print("\n".join(lines))
        summary = {"failures": failures, "exits": exits, "timings": timings(out), "ncu": {},
                   "torch": {}}
        print("\ntimings and launches (--repeat min/median, decode ms/token, --profile launches)")
        for label, row in summary["timings"].items():
            print(f"  {label:32s} " + ", ".join(f"{k} {v}" for k, v in row.items()))
        for name in sorted(os.listdir(out)):
            if name.startswith("ncu-") and "-sol-" in name and name.endswith(".stdout"):
                kernels = ncu_sections(open(os.path.join(out, name)).read())
                if kernels:
                    label = name[:-len(".stdout")]
                    summary["ncu"][label] = kernels
                    print(f"\n{label}: what bounds the MLIR kernels (% of peak, mean of launches)")
                    for kname, metrics in sorted(kernels.items()):
                        print(f"  {kname[:40]:40s} " + ", ".join(f"{m} {v}"
                                                               for m, v in metrics.items()))
                continue
            if name.startswith("ncu-") and name.endswith(".stdout"):
                kernels = ncu_kernels(open(os.path.join(out, name)).read())
                if kernels is None:
                    continue
                label = name[:-len(".stdout")]
                summary["ncu"][label] = kernels
                total = sum(k["us"] for k in kernels.values())
                launches = sum(k["launches"] for k in kernels.values())
                print(f"\n{label}: {launches} launches, {total / 1e3:.3f} ms of GPU time; slowest:")
                for kname, k in sorted(kernels.items(), key=lambda kv: -kv[1]["us"])[:12]:
                    print(f"  {kname[:48]:48s} {k['launches']:5d} x {k['us'] / k['launches']:9.2f} us"
                          f"  grids {k['grids'][:4]}")
            if name.startswith("torch-") and name.endswith(".stdout"):
                for line in open(os.path.join(out, name)):
                    if line.startswith("{"):
                        summary["torch"].update(json.loads(line))
        if summary["torch"]:
            print("\nPyTorch on the same GPU:")
            for key, value in summary["torch"].items():
                print(f"  {key}: {json.dumps(value)[:300]}")
            print("\nxf vs PyTorch (ms; the issues' targets are ratios of these):")
            for line in versus(summary["timings"], summary["torch"]):
                print("  " + line)
        for title, rows in (("split-K", split_k(summary["timings"])),
                            ("tensor-core GEMM tiles", wide_tiles(summary["timings"])),
                            ("wgmma GEMMs (sm_90a)", wgmma(summary["timings"])),
                            ("CUDA graphs", prefill_graphs(summary["timings"])),
                            ("fp32 FMA kernels", fma_kernels(summary["timings"]))):
            if rows:
                print(f"\n{title} (min of --repeat):")
                for line in rows:
                    print("  " + line)
        if targets := batch_targets(summary["timings"], out):
            summary["batch"] = targets
            print("\nbatches on the GPU (GPT-2, random weights):")
            for line in targets:
                print("  " + line)
        rows, rc = gpu_tuning(out, args.xfc, args.tuning_db)
        print("\nCUDA GEMM and attention schedules (tune phase"
              + (", fake stand-in times" if args.dry_run else "") + "):")
        for line in rows:
            print("  " + line)
        if rc:
            failures += 1
        missing = [label for label in exits if exits[label] != 0]
        print(f"\n{len(exits)} runs, {len(missing)} failed or timed out: {missing[:10]}")
        print(f"{failures} check(s) failed" if failures else "all checks passed")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(summary, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
