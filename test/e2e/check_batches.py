#!/usr/bin/env python3
"""Several sequences in one run give what one run per sequence gives.

The runtime loops over the sequences of a batch, one xf_forward (or generation) per sequence
(there are no padded-batch kernels), reusing the session's scratch and KV cache. This checks
that nothing leaks between sequences: for gpt2 (logits), minilm (hidden states and pooled
embeddings), transformer (encoder-decoder, one source per sequence) and generation (gpt2, greedy
and sampled), the batched outputs are bitwise equal to single runs, and the stacked
[n, l_max, d] outputs are zero past each sequence's length.

usage: check_batches.py --xfc build/bin/xfc [--workdir DIR]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "test", "reference", "oracle.py")
MODELS = {
    "gpt2": ("gpt2", "L=2,H=4,d_e=64,d_mlp=256,N_V=300,l_max=80", "--logits-out"),
    "minilm": ("minilm", "L=2,H=4,d_e=48,d_mlp=96,N_V=200,l_max=40", "--hidden-out"),
    "transformer": ("transformer", "L_enc=2,L_dec=2,H=4,d_e=64,d_mlp=128,N_V=256", "--logits-out"),
}
failures = []


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode:
        sys.exit(f"FAIL: {' '.join(cmd[:4])} ... exited {r.returncode}: {r.stderr.strip()}")
    return r


def expect(ok, what):
    print(f"{what}: {'ok' if ok else 'FAIL'}")
    if not ok:
        failures.append(what)


def check(name, xfc, work):
    arch, hparams, flag = MODELS[name]
    exe = os.path.join(work, name)
    run([xfc, os.path.join(ROOT, "examples", name + ".xf"),
         *[a for kv in hparams.split(",") for a in ("-D", kv)], "-o", exe])
    w = os.path.join(work, name + ".safetensors")
    run([sys.executable, ORACLE, "--arch", arch, "--hparams", hparams, "--write-random", w,
         "--seed", "3"])
    vocab = int(dict(kv.split("=") for kv in hparams.split(","))["N_V"])
    rng = np.random.default_rng(1)
    seqs = [",".join(map(str, rng.integers(0, vocab, size=n))) for n in (7, 1, 19, 12)]
    sources = [",".join(map(str, rng.integers(0, vocab, size=n))) for n in (5, 9, 2, 14)]

    def src(i):
        return ["--source-tokens", sources[i]] if arch == "transformer" else []

    def src_all():
        return [a for i in range(len(seqs)) for a in src(i)]

    singles = []
    for i, t in enumerate(seqs):
        f = os.path.join(work, f"{name}_{i}.npy")
        run([exe, "--weights", w, "--tokens", t, *src(i), flag, f])
        singles.append(np.load(f))
    f = os.path.join(work, f"{name}_batch.npy")
    run([exe, "--weights", w, *[a for t in seqs for a in ("--tokens", t)], *src_all(), flag, f])
    b = np.load(f)
    l_max = max(s.shape[0] for s in singles)
    expect(b.shape == (len(seqs), l_max, singles[0].shape[1]), f"{name} batch shape {b.shape}")
    same = all(b[i, :len(s)].tobytes() == s.tobytes() and not b[i, len(s):].any()
               for i, s in enumerate(singles))
    expect(same, f"{name} {flag} batch of {len(seqs)} == single runs (bitwise), zero padding")

    if name == "minilm":
        e = os.path.join(work, "e.npy")
        run([exe, "--weights", w, *[a for t in seqs for a in ("--tokens", t)],
             "--embeddings-out", e, "--normalize"])
        want = []
        for s in singles:
            v = s.astype(np.float64).mean(axis=0)
            want.append(v / np.linalg.norm(v))
        err = np.abs(np.load(e) - np.array(want)).max()
        expect(err <= 1e-6, f"minilm embeddings [n, d] vs pooled single hidden states "
                            f"(max|Δ| {err:.1e})")
        e1 = os.path.join(work, "e1.npy")
        run([exe, "--weights", w, "--tokens", seqs[2], "--embeddings-out", e1, "--normalize"])
        expect(np.load(e1)[0].tobytes() == np.load(e)[2].tobytes(),
               "minilm embedding of one sequence alone == its row in the batch (bitwise)")
    else:
        for extra in [[], ["--temperature", "0.9", "--top-p", "0.95", "--seed", "4"]]:
            gen = ["--weights", w, "--max-new-tokens", "12", *extra]
            one = "".join(run([exe, *gen, "--tokens", t, *src(i)]).stdout
                          for i, t in enumerate(seqs))
            many = run([exe, *gen, *[a for t in seqs for a in ("--tokens", t)], *src_all()]).stdout
            expect(one == many and len(many.splitlines()) == len(seqs),
                   f"{name} generation {'sampled' if extra else 'greedy'}: batch == single runs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xf-batch-") as tmp:
        for name in MODELS:
            check(name, args.xfc, args.workdir or tmp)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
