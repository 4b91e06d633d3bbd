#!/usr/bin/env python3
"""Mutation check for the spec frontend.

Makes broken variants of the example specs (truncated files, deleted and
duplicated lines, swapped tokens, flipped bytes) and absurd -D values, runs
`xfc --emit=xf` on each, and requires every run to end either in success or
in a located diagnostic (`file:line:col: error:` or `xfc: error:`) with exit
code 1. A signal, an exit code >= 2, a sanitizer report or a hang fails the
check; the offending input is written to --keep for a regression test.

usage: mutate.py XFC EXAMPLE.xf... [--per-file N] [--seed S] [--keep DIR]
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

LOCATED = re.compile(r"(:\d+:\d+: error: |^xfc: error: )", re.M)
ABSURD = ["0", "-1", "abc", "", "1e300", "2.5", "99999999999999999999",
          "2147483647", "5000", "nan", "0x10"]


def mutations(text, rng, count):
    """Yields (label, text) pairs derived from one spec."""
    data = text.encode()
    lines = text.split("\n")
    tokens = re.findall(r"\S+|\s+", text)
    words = [i for i, t in enumerate(tokens) if not t.isspace()]
    for _ in range(count):
        kind = rng.choice(["truncate", "delete", "duplicate", "swap", "flip",
                           "drop-token"])
        if kind == "truncate":
            cut = rng.randrange(len(data))
            yield f"truncate@{cut}", data[:cut]
        elif kind == "delete":
            i = rng.randrange(len(lines))
            yield f"delete-line-{i + 1}", "\n".join(lines[:i] + lines[i + 1:]).encode()
        elif kind == "duplicate":
            i = rng.randrange(len(lines))
            yield f"duplicate-line-{i + 1}", "\n".join(lines[:i + 1] + lines[i:]).encode()
        elif kind == "swap" and len(words) > 1:
            a, b = rng.sample(words, 2)
            t = list(tokens)
            t[a], t[b] = t[b], t[a]
            yield f"swap-{a}-{b}", "".join(t).encode()
        elif kind == "drop-token" and words:
            a = rng.choice(words)
            t = list(tokens)
            t[a] = ""
            yield f"drop-token-{a}", "".join(t).encode()
        else:
            b = bytearray(data)
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256)
            yield f"flip@{i}", bytes(b)


def hyperparameters(text):
    block = re.search(r"^hyperparameters\n(.*?)^\S", text, re.M | re.S)
    return re.findall(r"^\s+(\w+)\s*=", block.group(1), re.M) if block else []


def run(xfc, path, defines):
    cmd = [xfc, path, "--emit=xf", "-o", os.devnull]
    for d in defines:
        cmd += ["-D", d]
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "hang (30 s)"
    err = p.stderr.decode(errors="replace")
    if p.returncode == 0:
        return None
    if p.returncode != 1:
        return f"exit code {p.returncode}\n{err[-2000:]}"
    if "Sanitizer" in err or "PLEASE submit a bug report" in err:
        return f"crash report\n{err[-2000:]}"
    if not LOCATED.search(err):
        return f"error without a location\n{err[-2000:]}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("xfc")
    ap.add_argument("examples", nargs="+")
    ap.add_argument("--per-file", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", default=None)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    failures, runs = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for example in args.examples:
            text = open(example, encoding="utf-8").read()
            name = os.path.basename(example)
            cases = [(label, data, []) for label, data in
                     mutations(text, rng, args.per_file)]
            for h in hyperparameters(text):
                for value in rng.sample(ABSURD, 3):
                    cases.append((f"-D {h}={value}", text.encode(), [f"{h}={value}"]))
            for label, data, defines in cases:
                path = os.path.join(tmp, name)
                with open(path, "wb") as f:
                    f.write(data)
                runs += 1
                problem = run(args.xfc, path, defines)
                if problem:
                    failures.append((name, label, problem))
                    if args.keep:
                        os.makedirs(args.keep, exist_ok=True)
                        keep = os.path.join(args.keep, f"{name}.{len(failures)}.xf")
                        with open(keep, "wb") as f:
                            f.write(data)
    for name, label, problem in failures:
        print(f"FAIL {name} [{label}]: {problem}")
    print(f"mutate.py: {runs} runs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
