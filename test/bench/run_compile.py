#!/opt/xf-venv/bin/python
"""Time `xfc examples/gpt2.xf -o gpt2` with and without the object cache (issue 17).

Usage: test/bench/run_compile.py [--build DIR] [--spec FILE] [--rounds N] [--no-docs]

Each round, in a fresh cache directory (XF_CACHE_DIR; the user's cache is not touched):
  no cache   `--no-cache`: every object compiled (the compiler before the cache);
  cold       an empty cache: every object compiled and stored;
  cached     the same spec again: every object from the cache;
  one line   the spec with one line changed (the MLP's `approx = tanh` → `approx = erf`, i.e.
             the GELU of every layer's first MLP GEMM): that GEMM compiled, the rest (and the
             host code, whose only change is in the manifest) from the cache;
  layers     `L = 12` → `L = 11`: the host code compiled, every kernel from the cache.
Reports wall time (min and median over rounds) and the CPU time of xfc and its linker, the
objects compiled (`-v`), and the load average; writes the table into docs/bench.md between
the markers below unless --no-docs.
"""
import argparse
import os
import pathlib
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from benchlib import ROOT, cpu_model, loadavg, log, replace_doc_section, xf_version  # noqa: E402

BEGIN = "<!-- BEGIN xf-bench-compile (written by test/bench/run_compile.py) -->"
END = "<!-- END xf-bench-compile -->"
CHANGED_FROM, CHANGED_TO = "approx = tanh", "approx = erf"
LAYERS_FROM, LAYERS_TO = "L = 12 ", "L = 11 "


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed_compile(xfc, spec, out, env, extra=()):
    """(wall s, CPU s, objects compiled) of one `xfc spec -o out -v`."""
    cpu0, t0 = children_cpu(), time.perf_counter()
    r = subprocess.run([str(xfc), str(spec), "-o", str(out), "-v", *extra], env=env,
                       capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if r.returncode != 0:
        sys.exit(f"xfc failed: {r.stderr}")
    compiled = [m.group(1) for m in re.finditer(r"^xfc: (?:cache miss|compiled  ) (\S+( code| runtime)?)",
                                                 r.stderr, re.M)]
    return wall, cpu, compiled


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--spec", default=str(ROOT / "examples" / "gpt2.xf"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-docs", action="store_true")
    args = ap.parse_args()
    xfc = pathlib.Path(args.build) / "bin" / "xfc"
    spec = pathlib.Path(args.spec)
    text = spec.read_text()
    for old in (CHANGED_FROM, LAYERS_FROM):
        if text.count(old) != 1:
            sys.exit(f"{spec}: expected one '{old}' to change")
    load_before = loadavg()
    cases = ["no cache", "cold", "cached", "one line", "layers"]
    walls, cpus, compiled = {c: [] for c in cases}, {c: [] for c in cases}, {}
    with tempfile.TemporaryDirectory(prefix="xf-compile-bench-") as tmp:
        tmp = pathlib.Path(tmp)
        changed = tmp / "changed" / spec.name  # same file name: same source locations
        changed.parent.mkdir()
        changed.write_text(text.replace(CHANGED_FROM, CHANGED_TO))
        layers = tmp / "layers" / spec.name
        layers.parent.mkdir()
        layers.write_text(text.replace(LAYERS_FROM, LAYERS_TO))
        for round_ in range(args.rounds):
            cache = tmp / "cache"
            shutil.rmtree(cache, ignore_errors=True)
            env = dict(os.environ, XF_CACHE_DIR=str(cache))
            for case, source, extra in [("no cache", spec, ["--no-cache"]), ("cold", spec, []),
                                        ("cached", spec, []), ("one line", changed, []),
                                        ("layers", layers, [])]:
                wall, cpu, objs = timed_compile(xfc, source, tmp / "exe", env, extra)
                walls[case].append(wall)
                cpus[case].append(cpu)
                compiled[case] = objs
                log(f"round {round_ + 1}: {case:9s} {wall:6.2f} s wall, {cpu:6.2f} s CPU, "
                    f"{len(objs)} objects compiled")
    load_after = loadavg()

    rows = []
    for case in cases:
        objs = compiled[case]
        what = "all 8" if case in ("no cache", "cold") else (", ".join(objs) if objs else "none")
        rows.append(f"| {case} | {min(walls[case]):.2f} | {statistics.median(walls[case]):.2f} | "
                    f"{min(cpus[case]):.2f} | {what} |")
    section = "\n".join([
        BEGIN,
        "## Compile time: `xfc examples/gpt2.xf -o gpt2` and the object cache",
        "",
        "Run: `test/bench/run_compile.py` (options `--rounds`, `--spec`, `--no-docs`; ≈1 min per "
        "round). Each round starts from an empty cache directory; *one line* is the spec with "
        f"`{CHANGED_FROM}` → `{CHANGED_TO}` in the MLP line and *layers* the spec with "
        f"`{LAYERS_FROM.strip()}` → `{LAYERS_TO.strip()}`, each built against the cache of the "
        "unchanged spec (and, for *layers*, of the one-line change). CPU is xfc's user + system "
        "time with its linker's.",
        "",
        f"Machine: **{cpu_model()}**, {os.cpu_count()} CPUs; xf {xf_version()}; {args.rounds} rounds; "
        f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f}.",
        "",
        "| build | wall s (min) | wall s (median) | CPU s (min) | objects compiled |",
        "|---|---|---|---|---|",
        *rows,
        END,
    ])
    print(section)
    if not args.no_docs:
        replace_doc_section(BEGIN, END, section)
        log("wrote docs/bench.md")


if __name__ == "__main__":
    main()
