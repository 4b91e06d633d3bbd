#!/usr/bin/env python3
"""The xf interpreter (compiler/lib/Interpreter) against test/reference's numpy oracle.

For every example spec at the small sizes of test/e2e/check_examples.py: a random checkpoint
written by the oracle, then for each of its lengths `xf-interpret` (the interpreter on the
frontend's module, float64) and the oracle (float64, written from the paper independently) on
the same weights and tokens must satisfy max|Δ| / max|ref| ≤ 1e-12. Both evaluate the same
float32 weights in double precision, so they differ only by the order of their roundings
(~1e-16 per operation; 3e-15 is the largest seen); 1e-12 leaves room for the operations in sequence and for
the networks' amplification, and is 10⁸ below the 1e-4 the compiled models meet.
`xfc --check` trusts the interpreter as its reference: this test is what that trust rests on.

usage: check_oracle.py --interpreter build/bin/xf-interpret [--model gpt2 ...]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
from check_examples import MODELS, ORACLE  # noqa: E402

TOLERANCE = 1e-12


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def check_model(name, interpreter, workdir):
    arch, hparams, output, lengths = MODELS[name]
    defines = [arg for kv in hparams.split(",") for arg in ("-D", kv)]
    weights = os.path.join(workdir, name + ".safetensors")
    r = run([sys.executable, ORACLE, "--arch", arch, "--hparams", hparams, "--write-random",
             weights, "--seed", "3"])
    if r.returncode != 0:
        return [f"{name}: oracle --write-random failed: {r.stderr.strip()}"]
    rng = np.random.default_rng(7)
    vocab = int(dict(kv.split("=") for kv in hparams.split(","))["N_V"])
    failures = []
    for n in lengths:
        tokens = ",".join(str(t) for t in rng.integers(0, vocab, size=n))
        source = ",".join(str(t) for t in rng.integers(0, vocab, size=n + 3))
        extra = ["--source-tokens", source] if arch == "transformer" else []
        got = os.path.join(workdir, f"{name}_{n}_interp.npy")
        ref = os.path.join(workdir, f"{name}_{n}_ref.npy")
        r = run([interpreter, os.path.join(ROOT, "examples", name + ".xf"), *defines,
                 "--weights", weights, "--tokens", tokens, *extra, "-o", got])
        if r.returncode != 0:
            failures.append(f"{name} ℓ={n}: xf-interpret failed: {r.stderr.strip()}")
            continue
        flag = "--logits-out" if output == "logits" else "--hidden-out"
        r = run([sys.executable, ORACLE, "--arch", arch, "--hparams", hparams, "--weights",
                 weights, "--tokens", tokens, *extra, flag, ref])
        if r.returncode != 0:
            failures.append(f"{name} ℓ={n}: oracle failed: {r.stderr.strip()}")
            continue
        a, b = np.load(got), np.load(ref)
        if a.dtype != np.float64 or a.shape != b.shape:
            failures.append(f"{name} ℓ={n}: {a.dtype} {a.shape} vs oracle {b.shape}")
            continue
        err = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
        status = "ok" if err <= TOLERANCE else "FAIL"
        print(f"{name:12s} ℓ={n:<4d} max|Δ|/max|ref| = {err:.2e}  {status}")
        if not err <= TOLERANCE:
            failures.append(f"{name} ℓ={n}: max|Δ|/max|ref| = {err:.3e} > {TOLERANCE}")
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--interpreter", required=True)
    p.add_argument("--model", action="append", choices=sorted(MODELS))
    args = p.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="xf-interp-") as workdir:
        for name in args.model or sorted(MODELS):
            failures += check_model(name, args.interpreter, workdir)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
