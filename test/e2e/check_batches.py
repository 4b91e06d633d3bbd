#!/usr/bin/env python3
"""Several sequences in one run give what one run per sequence gives.

Decoders and encoders run a batch as packed rows: one xf_forward_packed call per --batch N
sequences, all rows in one [Σℓ, d] matrix, attention and positions per sequence (docs/abi.md,
"Packed batches"). A GEMM takes one of three paths by its rows M (gemv_rows_below and tile_rows
read from --emit=kernels): the GEMV (M < gemv_rows_below), the few-rows path of a weight packed
at load (M ≤ 4 row tiles, FEW_ROW_TILES) and the tiled path; each path's sums do not depend on
the other rows, but two paths may sum in different orders. Attention in a packed call is one
segmented kernel (docs/abi.md), which streams a sequence's keys in blocks of its own key_block
(by default a quarter of the per-sequence kernel's, HostLowering::segmentedSpecOf): up to one
block of keys it sums as the single run's kernel does, beyond it merges the blocks' softmax
states in another order. Each sequence's rows are bitwise equal to its single run when the
single run (ℓ rows) and the packed call (the Σℓ rows of its chunk of --batch N) take the same
GEMM path and its keys fit one segmented key block; otherwise they must agree within
max|Δ|/max|ref| ≤ 1e-5 (float32 rounding of a reordered sum). Each packed sequence
is also checked against the float64 oracle (the ≤ 1e-4 bound of check_examples.py), for
mixed lengths including 1 and the model's maximum. `--batch 1` (one xf_forward per sequence)
is bitwise equal to single runs, so nothing leaks between sequences.

Encoder-decoders (transformer) pack both sides: the sources' rows in one [Σℓ_z, d] matrix, the
targets' in one [Σℓ, d], cross attention per source/target pair; the path rule above holds for
both sides (the source rows' GEMMs and the target rows'). transformer.xf has no position limit:
its longest sequences here are 64 target and 80 source tokens. Its --batch-file lines are
SOURCE<TAB>TARGET (or SOURCE with --bos). Its pairs generate together too, re-running each
prefix (no KV cache): one xf_forward_packed call per step over every running pair.
Generation (gpt2, greedy and sampled): the sequences decode together (xf_forward_cached_packed,
all of them, or 3 at a time with continuous batching) and print what single runs print. The stacked
[n, l_max, d] outputs are zero past each sequence's length.

usage: check_batches.py --xfc build/bin/xfc [--workdir DIR]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "test", "reference", "oracle.py")
MODELS = {
    # Heads of 64: decode steps of several sequences run xfrt_decode_attention_batched.
    "gpt2": ("gpt2", "L=2,H=2,d_e=128,d_mlp=256,N_V=300,l_max=80", "--logits-out"),
    "minilm": ("minilm", "L=2,H=4,d_e=48,d_mlp=96,N_V=200,l_max=40", "--hidden-out"),
    "transformer": ("transformer", "L_enc=2,L_dec=2,H=4,d_e=64,d_mlp=128,N_V=256", "--logits-out"),
}
failures = []
REORDER_BOUND = 1e-5  # packed vs single run of a sequence whose GEMMs took another path
FEW_ROW_TILES = 4     # GemmAlgorithm.h kSmallRowTiles: the few-rows path takes M <= 4 tile_rows
ORACLE_BOUND = 1e-4   # as check_examples.py


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
    hp = dict(kv.split("=") for kv in hparams.split(","))
    vocab = int(hp["N_V"])
    rng = np.random.default_rng(1)
    lengths = (7, 1, 19, 12, 64) if arch == "transformer" else (7, 1, 19, 12, 2, int(hp["l_max"]), 5, 3)
    seqs = [",".join(map(str, rng.integers(0, vocab, size=n))) for n in lengths]
    sources = [",".join(map(str, rng.integers(0, vocab, size=n))) for n in (5, 9, 1, 80, 14)]
    kernels = run([xfc, os.path.join(ROOT, "examples", name + ".xf"),
                   *[a for kv in hparams.split(",") for a in ("-D", kv)], "--emit=kernels"]).stdout
    gemv_below = max([int(x) for x in re.findall(r"gemv_rows_below = (\d+)", kernels)] or [0])
    tile_rows = max([int(x) for x in re.findall(r"tile_rows = (\d+)", kernels)] or [0])
    # The segmented attention's key block (untuned: a quarter of the per-sequence kernel's).
    segment_keys = min(int(x) // 4 for x in re.findall(r"key_block = (\d+)", kernels))

    def gemm_path(rows):
        return 0 if rows < gemv_below else 1 if rows <= FEW_ROW_TILES * tile_rows else 2

    def same_path(i, chunk):
        """Whether sequence i's single run and the packed call of its chunk (--batch N: the
        sequences in groups of N, in input order) take the same GEMM path (an encoder-decoder's
        sources too)."""
        first = i // chunk * chunk
        sides = [seqs] + ([sources] if arch == "transformer" else [])
        one_key_block = all(len(side[i].split(",")) <= segment_keys for side in sides)
        return one_key_block and all(
            gemm_path(len(side[i].split(","))) ==
            gemm_path(sum(len(x.split(",")) for x in side[first:first + chunk])) for side in sides)

    def src(i):
        return ["--source-tokens", sources[i]] if arch == "transformer" else []

    def src_all():
        return [a for i in range(len(seqs)) for a in src(i)]

    singles = []
    for i, t in enumerate(seqs):
        f = os.path.join(work, f"{name}_{i}.npy")
        run([exe, "--weights", w, "--tokens", t, *src(i), flag, f])
        singles.append(np.load(f))
    l_max = max(s.shape[0] for s in singles)
    all_seqs = [a for t in seqs for a in ("--tokens", t)]

    def batch(*extra):
        f = os.path.join(work, f"{name}_batch.npy")
        run([exe, "--weights", w, *all_seqs, *src_all(), flag, f, *extra])
        b = np.load(f)
        expect(b.shape == (len(seqs), l_max, singles[0].shape[1]),
               f"{name} batch {' '.join(extra)} shape {b.shape}")
        expect(not any(b[i, len(s):].any() for i, s in enumerate(singles)),
               f"{name} batch {' '.join(extra)}: zero past each sequence's length")
        return b

    b = batch("--batch", "1")
    expect(all(b[i, :len(s)].tobytes() == s.tobytes() for i, s in enumerate(singles)),
           f"{name} {flag} --batch 1 (one call per sequence) == single runs (bitwise)")
    for extra in (["--batch", "3"], []):
        b = batch(*extra)
        what = f"{name} {flag} batch of {len(seqs)} {' '.join(extra) or '(packed)'}"
        for i, s in enumerate(singles):
            got = b[i, :len(s)]
            if same_path(i, int(extra[1]) if extra else 32):
                expect(got.tobytes() == s.tobytes(), f"{what}: ℓ={len(s)} == single run (bitwise)")
            else:
                err = np.abs(got - s).max() / np.abs(s).max()
                expect(err <= REORDER_BOUND, f"{what}: ℓ={len(s)} (another GEMM path or key "
                                             f"blocks) vs single "
                                             f"run max|Δ|/max|ref| {err:.1e} ≤ {REORDER_BOUND}")
    # The oracle on each sequence (each source/target pair) of the packed batch.
    for i, s in enumerate(singles):
        f = os.path.join(work, f"{name}_packed_{i}.npy")
        np.save(f, b[i, :len(s)])
        r = subprocess.run([sys.executable, ORACLE, "--arch", arch, "--hparams", hparams,
                            "--weights", w, "--tokens", seqs[i], *src(i), "--check-against", f,
                            "--tol", str(ORACLE_BOUND)], capture_output=True, text=True)
        pair = f" (source ℓ_z={len(sources[i].split(','))})" if arch == "transformer" else ""
        expect(r.returncode == 0, f"{name} packed sequence ℓ={len(s)}{pair} vs oracle: "
                                  f"{(r.stdout + r.stderr).strip().splitlines()[-1:]}")

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
        alone, in_batch = np.load(e1)[0], np.load(e)[2]
        if same_path(2, 32):
            expect(alone.tobytes() == in_batch.tobytes(),
                   "minilm embedding of one sequence alone == its row in the batch (bitwise)")
        else:
            err = np.abs(alone - in_batch).max()
            expect(err <= REORDER_BOUND, "minilm embedding of one sequence alone vs its row in "
                                         f"the batch (another GEMM path): max|Δ| {err:.1e}")
        # --batch-file: id lists (no tokenizer), blank lines skipped, JSON Lines in input order.
        bf = os.path.join(work, "inputs.txt")
        with open(bf, "w") as fh:
            fh.write("\n".join(seqs[:3]) + "\n\n  \r\n" + "\r\n".join(seqs[3:]) + "\n")
        lines = run([exe, "--weights", w, "--batch-file", bf, "--normalize", "--batch", "4"]
                    ).stdout.splitlines()
        rows = [json.loads(x) for x in lines]
        want_lines = [1, 2, 3] + list(range(6, 6 + len(seqs) - 3))
        expect([r["index"] for r in rows] == list(range(len(seqs))) and
               [r["line"] for r in rows] == want_lines and
               [r["tokens"] for r in rows] == [len(s) for s in singles],
               "minilm --batch-file: one JSON line per non-blank input line, in order")
        got = np.array([r["embedding"] for r in rows], dtype=np.float32)
        run([exe, "--weights", w, *[a for t in seqs for a in ("--tokens", t)],
             "--embeddings-out", e, "--normalize", "--batch", "4"])
        expect(got.tobytes() == np.load(e).tobytes(),
               "minilm --batch-file embeddings == --embeddings-out rows (bitwise: shortest "
               "round-trip decimals)")
    else:
        for extra in [[], ["--temperature", "0.9", "--top-p", "0.95", "--seed", "4"]]:
            gen = ["--weights", w, "--max-new-tokens", "12", *extra]
            one = "".join(run([exe, *gen, "--tokens", t, *src(i)]).stdout
                          for i, t in enumerate(seqs))
            r = run([exe, *gen, *[a for t in seqs for a in ("--tokens", t)], *src_all()])
            many = r.stdout
            expect(one == many and len(many.splitlines()) == len(seqs) and
                   f"up to {len(seqs)} decoding together" in r.stderr,
                   f"{name} generation {'sampled' if extra else 'greedy'}: batch decoding "
                   f"together == single runs")
            # Continuous batching: 3 places for all sequences, so finished ones leave and waiting
            # ones join (a prefill and decoding steps in one call).
            r = run([exe, *gen, *[a for t in seqs for a in ("--tokens", t)], *src_all(),
                     "--batch", "3"])
            expect(r.stdout == one and "up to 3 decoding together" in r.stderr,
                   f"{name} generation {'sampled' if extra else 'greedy'}, 3 decoding together: "
                   f"== single runs")
            if arch == "transformer":
                # --batch-file: SOURCE<TAB>TARGET id lists, JSON Lines in input order.
                bf = os.path.join(work, "pairs.txt")
                with open(bf, "w") as fh:
                    fh.write("".join(f"{sources[i]}\t{t}\n\n" for i, t in enumerate(seqs)))
                rows = [json.loads(x)
                        for x in run([exe, *gen, "--batch-file", bf]).stdout.splitlines()]
                expect([",".join(map(str, r["ids"])) for r in rows] == one.splitlines() and
                       [r["line"] for r in rows] == list(range(1, 2 * len(seqs), 2)) and
                       [r["prompt_tokens"] for r in rows] == [len(t.split(",")) for t in seqs],
                       f"{name} --batch-file SOURCE<TAB>TARGET generation "
                       f"{'sampled' if extra else 'greedy'}: JSON Lines ids == single runs")
                # Sources alone with --bos: the targets start with the BOS id.
                with open(bf, "w") as fh:
                    fh.write("".join(x + "\n" for x in sources))
                bos = [",".join(map(str, json.loads(x)["ids"]))
                       for x in run([exe, *gen, "--bos", "1", "--batch-file", bf]).stdout.splitlines()]
                single = [run([exe, *gen, "--bos", "1", *src(i)]).stdout.strip()
                          for i in range(len(sources))]
                expect(bos == single, f"{name} --batch-file sources with --bos "
                                      f"{'sampled' if extra else 'greedy'}: == single runs")
                continue
            bf = os.path.join(work, "prompts.txt")
            with open(bf, "w") as fh:
                fh.write("\n".join(seqs) + "\n")
            rows = [json.loads(x) for x in run([exe, *gen, "--batch-file", bf]).stdout.splitlines()]
            expect([",".join(map(str, r["ids"])) for r in rows] == one.splitlines() and
                   [r["prompt_tokens"] for r in rows] == [len(s.split(",")) for s in seqs],
                   f"{name} --batch-file generation {'sampled' if extra else 'greedy'}: "
                   f"JSON Lines ids == single runs")


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
