"""A model against test/reference's oracle at several sequence lengths.

The loop that test/e2e/check_examples.py (compiled executables) and
test/interpreter/check_oracle.py (xf-interpret) share: random token ids per length (and source
ids, three longer, for the encoder-decoder), the candidate's output and the oracle's float64
output on the same weights, and max|Δ| / max|ref| against a bound.
"""

import os
import subprocess

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "test", "reference", "oracle.py")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def relative_error(got, ref):
    """max|got - ref| / max|ref|."""
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def compare_lengths(name, model, weights, produce, *, python, workdir, seed, tolerance,
                    dtype=None, oracle_args=()):
    """Runs `produce(tokens, extra_args, output_flag, path)` — it writes the candidate's .npy
    at `path`, or returns why it could not — and the oracle for each length of `model`
    (oracle arch, hyperparameters, output kind, lengths; check_examples.MODELS), the oracle
    with `oracle_args` too. Prints a line per length; returns the failures."""
    arch, hparams, output, lengths = model
    rng = np.random.default_rng(seed)
    vocab = int(dict(kv.split("=") for kv in hparams.split(","))["N_V"])
    flag = "--logits-out" if output == "logits" else "--hidden-out"
    failures = []
    for n in lengths:
        tokens = ",".join(str(t) for t in rng.integers(0, vocab, size=n))
        source = ",".join(str(t) for t in rng.integers(0, vocab, size=n + 3))
        extra = ["--source-tokens", source] if arch == "transformer" else []
        got = os.path.join(workdir, f"{name}_{n}_got.npy")
        ref = os.path.join(workdir, f"{name}_{n}_ref.npy")
        why = produce(tokens, extra, flag, got)
        if why:
            failures.append(f"{name} ℓ={n}: {why}")
            continue
        r = run([python, ORACLE, "--arch", arch, "--hparams", hparams, "--weights", weights,
                 "--tokens", tokens, *extra, *oracle_args, flag, ref])
        if r.returncode != 0:
            failures.append(f"{name} ℓ={n}: oracle failed: {r.stderr.strip()}")
            continue
        a, b = np.load(got), np.load(ref)
        if a.shape != b.shape or (dtype is not None and a.dtype != dtype):
            failures.append(f"{name} ℓ={n}: {a.dtype} {a.shape} vs oracle {b.shape}")
            continue
        err = relative_error(a, b)
        status = "ok" if err <= tolerance else "FAIL"
        print(f"{name:12s} ℓ={n:<4d} max|Δ|/max|ref| = {err:.2e}  {status}")
        if not err <= tolerance:
            failures.append(f"{name} ℓ={n}: max|Δ|/max|ref| = {err:.3e} > {tolerance}")
    return failures


def report(failures):
    """Prints the failures; the exit status."""
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0
