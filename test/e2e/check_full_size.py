#!/opt/xf-venv/bin/python
"""Slow check, not in CI: GPT-2 small and BERT-base at full size against the oracle.

usage: test/e2e/check_full_size.py [--xfc build/bin/xfc] [--model gpt2|bert ...]
                                   [--lengths gpt2=1,17,128 --lengths bert=1,17,128,512]
                                   [--seed S] [--threads N] [--workdir DIR]

For each model: `xfc examples/M.xf -o exe` with no -D (the hyperparameters of
docs/checkpoints.md: GPT-2 small 124M, BERT-base 110M), a random float32 checkpoint from the
independent oracle's writer (`oracle.py --arch M --write-random W --seed S`), then for each
length ℓ the same random tokens go to the executable (`--logits-out` / `--hidden-out`, float32)
and to the float64 oracle; max|Δ|/max|ref| must be ≤ 1e-4 (docs/correctness.md). Prints one
line per case (error, executable and oracle wall time) and exits 1 on any failure.
Defaults: gpt2 ℓ = 1, 17, 128, 300, 1024 (its ℓ_max); bert ℓ = 1, 17, 128, 512 (its ℓ_max). ≈3 min on 2 cores.
Run with a Python that has numpy (the oracle's own requirement), e.g. /opt/xf-venv/bin/python.
"""

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "test", "reference", "oracle.py")
TOLERANCE = 1e-4

# model → (oracle arch, vocabulary, output kind, default lengths)
MODELS = {
    "gpt2": ("gpt2", 50257, "logits", [1, 17, 128, 300, 1024]),
    "bert": ("bert", 30522, "hidden", [1, 17, 128, 512]),
}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def run(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, time.perf_counter() - t0


def check_model(name, lengths, args, workdir):
    arch, vocab, output, _ = MODELS[name]
    exe = os.path.join(workdir, name)
    r, secs = run([args.xfc, os.path.join(ROOT, "examples", name + ".xf"), "-o", exe])
    if r.returncode != 0:
        return [f"{name}: xfc failed: {r.stderr.strip()}"], []
    print(f"{name}: compiled in {secs:.1f} s", flush=True)
    weights = os.path.join(workdir, name + ".safetensors")
    r, secs = run([sys.executable, ORACLE, "--arch", arch, "--write-random", weights,
                   "--seed", str(args.seed)])
    if r.returncode != 0:
        return [f"{name}: oracle --write-random failed: {r.stderr.strip()}"], []
    print(f"{name}: random checkpoint ({os.path.getsize(weights) / 2**20:.0f} MiB, "
          f"seed {args.seed}) in {secs:.1f} s", flush=True)
    rng = np.random.default_rng(args.seed)
    flag = "--logits-out" if output == "logits" else "--hidden-out"
    failures, rows = [], []
    for n in lengths:
        tokens = ",".join(str(t) for t in rng.integers(0, vocab, size=n))
        got = os.path.join(workdir, f"{name}_{n}_xf.npy")
        ref = os.path.join(workdir, f"{name}_{n}_ref.npy")
        r, exe_s = run([exe, "--weights", weights, "--tokens", tokens, "--threads",
                        str(args.threads), flag, got])
        if r.returncode != 0:
            failures.append(f"{name} ℓ={n}: executable failed: {r.stderr.strip()}")
            continue
        r, ref_s = run([sys.executable, ORACLE, "--arch", arch, "--weights", weights,
                        "--tokens", tokens, flag, ref])
        if r.returncode != 0:
            failures.append(f"{name} ℓ={n}: oracle failed: {r.stderr.strip()}")
            continue
        a, b = np.load(got), np.load(ref)
        if a.shape != b.shape:
            failures.append(f"{name} ℓ={n}: shape {a.shape} vs oracle {b.shape}")
            continue
        if not np.all(np.isfinite(a)):
            failures.append(f"{name} ℓ={n}: non-finite values in the executable's output")
            continue
        err = float(np.max(np.abs(a.astype(np.float64) - b)) / np.max(np.abs(b)))
        ok = err <= TOLERANCE
        rows.append((name, n, list(a.shape), err, ok, exe_s, ref_s))
        print(f"{name:5s} ℓ={n:<4d} {str(list(a.shape)):13s} max|Δ|/max|ref| = {err:.2e}  "
              f"{'ok' if ok else 'FAIL'}   (executable {exe_s:.1f} s incl. loading, "
              f"oracle {ref_s:.1f} s)", flush=True)
        if not ok:
            failures.append(f"{name} ℓ={n}: max|Δ|/max|ref| = {err:.3e} > {TOLERANCE}")
    return failures, rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--xfc", default=os.path.join(ROOT, "build", "bin", "xfc"))
    p.add_argument("--model", action="append", choices=sorted(MODELS))
    p.add_argument("--lengths", action="append", default=[],
                   help="MODEL=L1,L2,... (replaces that model's default lengths)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workdir")
    args = p.parse_args()
    lengths = {m: v[3] for m, v in MODELS.items()}
    for spec in args.lengths:
        m, _, ls = spec.partition("=")
        if m not in MODELS:
            p.error(f"--lengths: unknown model {m!r}")
        lengths[m] = [int(x) for x in ls.split(",")]
    print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {cpu_model()}, "
          f"{os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, tolerance {TOLERANCE:g}", flush=True)
    t0 = time.perf_counter()
    failures, rows = [], []
    with tempfile.TemporaryDirectory(prefix="xf-full-size-") as tmp:
        workdir = args.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        for name in args.model or sorted(MODELS):
            f, r = check_model(name, lengths[name], args, workdir)
            failures += f
            rows += r
    for f in failures:
        print("FAIL:", f)
    worst = max((r[3] for r in rows), default=float("nan"))
    print(f"{len(rows) - sum(not r[4] for r in rows)} passed, {len(failures)} failed; "
          f"worst max|Δ|/max|ref| {worst:.2e}; {time.perf_counter() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
