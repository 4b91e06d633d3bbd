#!/usr/bin/env python3
"""Long fuzz campaigns, outside CI: each libFuzzer target for N minutes (or N runs).

    test/fuzz/campaign.py [--build build] [--minutes 10] [--runs N] [--only spec,tokenizer]
                          [--update-corpus]

The targets are the ones the build has (cmake/XfFuzz.cmake; clang with -fsanitize=fuzzer):
xf-spec-fuzzer (the frontend), xf-runtime-fuzzer (JSON, safetensors, manifest, token lists),
xf-tokenizer-fuzzer (both tokenizers' loaders and encoders) and xf-gguf-fuzzer (the GGUF
reader, its getters, dequantization and tokenizer; seeds written by its make_corpus.py).
Each starts from the seeds kept in the repository (below) plus its working corpus in
BUILD/fuzz-campaign/NAME/corpus, which persists between campaigns. Crashes, leaks, timeouts
and out-of-memory inputs are saved as BUILD/fuzz-campaign/NAME/crash-* etc.; the campaign
exits 1 if any target found one.

Prints, and writes to BUILD/fuzz-campaign/report.md, one row per target: executions,
executions per second, coverage (libFuzzer's edge counter "cov" and feature counter "ft")
and corpus size. --update-corpus merges the inputs that add coverage into the repository's
seed directory of each target (libFuzzer -merge=1), to be committed.
"""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# target -> (binary, seed directories in the repository (the first receives --update-corpus
#            merges), extra libFuzzer flags, extra environment). A target may also have a
#            script that writes seeds (SEED_WRITERS), run into BUILD/fuzz-campaign/NAME/seeds.
TARGETS = {
    "spec": ("xf-spec-fuzzer",
             ["test/fuzz/corpus/spec", "examples", "test/Frontend", "test/Frontend/errors",
              "test/fuzz/regressions"],
             ["-max_len=65536"], {"ASAN_OPTIONS": "detect_leaks=0:allow_user_poisoning=0"}),
    "runtime": ("xf-runtime-fuzzer", ["test/fuzz/runtime/corpus"], [], {}),
    "tokenizer": ("xf-tokenizer-fuzzer", ["test/tokenizers/fuzz/corpus"], ["-max_len=4096"], {}),
    "gguf": ("xf-gguf-fuzzer", ["test/fuzz/corpus/gguf"], [], {}),
}
SEED_WRITERS = {"gguf": "test/fuzz/gguf/make_corpus.py"}


def parse_stats(log):
    stats = {}
    m = re.search(r"stat::number_of_executed_units:\s*(\d+)", log)
    stats["executions"] = int(m.group(1)) if m else None
    progress = re.findall(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/(\S+)", log)
    if progress:
        last = progress[-1]
        stats.update(cov=int(last[1]), ft=int(last[2]), corpus=int(last[3]))
        if stats["executions"] is None:
            stats["executions"] = int(last[0])
    m = re.search(r"stat::peak_rss_mb:\s*(\d+)", log)
    stats["peak_rss_mb"] = int(m.group(1)) if m else None
    return stats


def run_target(name, build, args, out_dir):
    binary, seeds, flags, env = TARGETS[name]
    exe = os.path.join(build, "bin", binary)
    if not os.path.exists(exe):
        return None
    work = os.path.join(out_dir, name)
    corpus = os.path.join(work, "corpus")
    os.makedirs(corpus, exist_ok=True)
    seed_dirs = [os.path.join(ROOT, s) for s in seeds if os.path.isdir(os.path.join(ROOT, s))]
    if name in SEED_WRITERS:
        written = os.path.join(work, "seeds")
        subprocess.check_call([sys.executable, os.path.join(ROOT, SEED_WRITERS[name]), written])
        seed_dirs.append(written)
    cmd = [exe, f"-max_total_time={int(args.minutes * 60)}", "-timeout=10",
           "-rss_limit_mb=4096", "-print_final_stats=1", f"-artifact_prefix={work}/",
           *flags, corpus, *seed_dirs]
    if args.runs:
        cmd.insert(1, f"-runs={args.runs}")
    log_path = os.path.join(work, "log.txt")
    print(f"== {name}: {' '.join(cmd)}", flush=True)
    start = time.time()
    with open(log_path, "w") as log:
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT,
                             env={**os.environ, **env})
    seconds = time.time() - start
    with open(log_path, errors="replace") as f:
        stats = parse_stats(f.read())
    artifacts = sorted(f for f in os.listdir(work)
                       if f.split("-")[0] in ("crash", "leak", "timeout", "oom", "slow"))
    stats.update(name=name, rc=rc, seconds=seconds, artifacts=artifacts, log=log_path)
    if args.update_corpus and seed_dirs:
        target_dir = os.path.join(ROOT, seeds[0])
        os.makedirs(target_dir, exist_ok=True)
        subprocess.call([exe, "-merge=1", *flags, target_dir, corpus],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        env={**os.environ, **env})
    return stats


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--minutes", type=float, default=10.0, help="per target (default 10)")
    p.add_argument("--runs", type=int, default=0, help="stop a target after N executions")
    p.add_argument("--only", default=",".join(TARGETS), help="comma-separated targets")
    p.add_argument("--update-corpus", action="store_true",
                   help="merge coverage-increasing inputs into the repository's seeds")
    args = p.parse_args()
    out_dir = os.path.join(args.build, "fuzz-campaign")
    os.makedirs(out_dir, exist_ok=True)
    rows, failed = [], False
    for name in args.only.split(","):
        if name not in TARGETS:
            sys.exit(f"unknown target '{name}' (known: {', '.join(TARGETS)})")
        stats = run_target(name, args.build, args, out_dir)
        if stats is None:
            print(f"== {name}: {TARGETS[name][0]} is not built; skipped")
            continue
        rows.append(stats)
        failed |= stats["rc"] != 0 or bool(stats["artifacts"])
    lines = ["| target | executions | exec/s | cov | ft | corpus | peak RSS MB | result |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        execs = r["executions"] or 0
        result = "ok" if r["rc"] == 0 and not r["artifacts"] else \
            f"FAILED (exit {r['rc']}; {', '.join(r['artifacts']) or 'see ' + r['log']})"
        lines.append(f"| {r['name']} | {execs:,} | {execs / max(r['seconds'], 1e-9):,.0f} | "
                     f"{r.get('cov', '-')} | {r.get('ft', '-')} | {r.get('corpus', '-')} | "
                     f"{r['peak_rss_mb'] or '-'} | {result} |")
    report = "\n".join(lines) + "\n"
    print(report)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(f"Fuzz campaign, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                f"{args.minutes:g} min per target\n\n" + report)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
