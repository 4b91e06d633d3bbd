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
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "e2e"))
from check_examples import MODELS  # noqa: E402
from oracle_runs import ORACLE, ROOT, report, run, compare_lengths  # noqa: E402

TOLERANCE = 1e-12


def check_model(name, interpreter, workdir):
    arch, hparams, _, _ = MODELS[name]
    defines = [arg for kv in hparams.split(",") for arg in ("-D", kv)]
    weights = os.path.join(workdir, name + ".safetensors")
    r = run([sys.executable, ORACLE, "--arch", arch, "--hparams", hparams, "--write-random",
             weights, "--seed", "3"])
    if r.returncode != 0:
        return [f"{name}: oracle --write-random failed: {r.stderr.strip()}"]

    def interpreted(tokens, extra, flag, path):
        r = run([interpreter, os.path.join(ROOT, "examples", name + ".xf"), *defines,
                 "--weights", weights, "--tokens", tokens, *extra, "-o", path])
        return f"xf-interpret failed: {r.stderr.strip()}" if r.returncode != 0 else None

    return compare_lengths(name, MODELS[name], weights, interpreted, python=sys.executable,
                           workdir=workdir, seed=7, tolerance=TOLERANCE, dtype=np.float64)


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
