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

The oracle on a packed batch: every model also runs as @forward_packed (`xf-interpret
--segments`: all its lengths in one batch, the ops that see whole sequences taking the
`segments` operand; the encoder-decoder's sources packed too, of other lengths, cross
attention pairing target i with source i), and each sequence's rows must meet the same bound
against the oracle run on that sequence (and its source) alone.

Both again on the fused module (`xf-interpret --fusion=cpu|cuda`: the kernel-level ops `xfc
--fusion` builds for each target, which `xfc --check` interprets), within the same bound: the
interpreter's semantics of fused QKV projections, GEMM epilogues, RoPE inside attention and
norms as GEMM prologues (the CUDA build's; no CPU build has them, so only this checks them).

usage: check_oracle.py --interpreter build/bin/xf-interpret [--model gpt2 ...]
"""

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "e2e"))
from check_examples import MODELS  # noqa: E402
from oracle_runs import ORACLE, ROOT, report, run, compare_lengths, relative_error  # noqa: E402

TOLERANCE = 1e-12
FUSIONS = ("none", "cpu", "cuda")  # xf-interpret --fusion: unfused, then as xfc fuses per target


def fused_label(name, fusion):
    """How a run is named in the report (and its files): the model, and its fusion if any."""
    return name if fusion == "none" else f"{name}.fused-{fusion}"


def check_model(name, interpreter, workdir):
    arch, hparams, _, _ = MODELS[name]
    defines = [arg for kv in hparams.split(",") for arg in ("-D", kv)]
    weights = os.path.join(workdir, name + ".safetensors")
    r = run([sys.executable, ORACLE, "--arch", arch, "--hparams", hparams, "--write-random",
             weights, "--seed", "3"])
    if r.returncode != 0:
        return [f"{name}: oracle --write-random failed: {r.stderr.strip()}"]

    failures = []
    for fusion in FUSIONS:
        def interpreted(tokens, extra, flag, path):
            r = run([interpreter, os.path.join(ROOT, "examples", name + ".xf"), *defines,
                     "--fusion", fusion, "--weights", weights, "--tokens", tokens, *extra,
                     "-o", path])
            return f"xf-interpret failed: {r.stderr.strip()}" if r.returncode != 0 else None

        label = fused_label(name, fusion)
        failures += compare_lengths(label, MODELS[name], weights, interpreted,
                                    python=sys.executable, workdir=workdir, seed=7,
                                    tolerance=TOLERANCE, dtype=np.float64)
        failures += check_packed(name, interpreter, defines, weights, workdir, fusion)
    return failures


def check_packed(name, interpreter, defines, weights, workdir, fusion):
    """@forward_packed on one batch of all the model's lengths vs the oracle per sequence."""
    arch, hparams, output, lengths = MODELS[name]
    rng = np.random.default_rng(11)
    vocab = int(dict(kv.split("=") for kv in hparams.split(","))["N_V"])
    sequences = [rng.integers(0, vocab, size=n) for n in lengths]
    # An encoder-decoder's sources: packed too, of other lengths (target i reads source i).
    sources = ([rng.integers(0, vocab, size=n) for n in [3, 1, 2 * lengths[-1]][:len(lengths)]]
               if arch == "transformer" else [])
    source_args = ["--source-tokens", ",".join(str(t) for s in sources for t in s),
                   "--source-segments", ",".join(str(len(s)) for s in sources)] if sources else []
    got = os.path.join(workdir, f"{name}_packed.npy")
    r = run([interpreter, os.path.join(ROOT, "examples", name + ".xf"), *defines,
             "--fusion", fusion, "--weights", weights,
             "--tokens", ",".join(str(t) for s in sequences for t in s),
             "--segments", ",".join(str(n) for n in lengths), *source_args, "-o", got])
    if r.returncode != 0:
        return [f"{name} packed {lengths}: xf-interpret failed: {r.stderr.strip()}"]
    packed = np.load(got)
    if packed.shape[0] != sum(lengths):
        return [f"{name} packed {lengths}: {packed.shape[0]} rows, expected {sum(lengths)}"]
    flag = "--logits-out" if output == "logits" else "--hidden-out"
    failures, first, worst = [], 0, 0.0
    for i, tokens in enumerate(sequences):
        ref = os.path.join(workdir, f"{name}_packed_{i}_ref.npy")
        source = (["--source-tokens", ",".join(str(t) for t in sources[i])] if sources else [])
        r = run([sys.executable, ORACLE, "--arch", arch, "--hparams", hparams, "--weights",
                 weights, "--tokens", ",".join(str(t) for t in tokens), *source, flag, ref])
        if r.returncode != 0:
            return failures + [f"{name} packed: oracle failed: {r.stderr.strip()}"]
        b = np.load(ref)
        a = packed[first:first + len(tokens)]
        first += len(tokens)
        err = relative_error(a, b) if a.shape == b.shape else float("inf")
        worst = max(worst, err)
        if not err <= TOLERANCE:
            failures.append(f"{name} packed sequence {i} (ℓ={len(tokens)}): "
                            f"max|Δ|/max|ref| = {err:.3e} > {TOLERANCE}")
    label = fused_label(name, fusion)
    print(f"{label:12s} packed {lengths}  worst max|Δ|/max|ref| = {worst:.2e}  "
          f"{'FAIL' if failures else 'ok'}")
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
    sys.exit(report(failures))


if __name__ == "__main__":
    main()
