#!/opt/xf-venv/bin/python
"""The documented training run (issue 15): a small GPT on a public-domain text, offline.

Usage: test/bench/run_training_text.py [--build DIR] [--steps N] [--batch B] [--seq-len L]
                                       [--threads N] [--workdir DIR] [--no-docs]

The text: the King James Version of the Bible (public domain), from Debian's bible-kjv-text
package, printed by its `bible` program (apt-get install bible-kjv) with the verse numbers
dropped. Tokens: its UTF-8 bytes (a .ids file of ids 0-255: a byte-level model, since on two
shared cores a 50 257-token unembedding would take 80 % of every step); the last 5 % is held
out. The model: examples/gpt2.xf with L = 4, H = 4, d_e = 256, d_mlp = 1024, N_V = 256,
ℓ_max = 256, random initial weights, trained by
`xfc --train -o trainer` with AdamW (warm-up 100 steps, cosine to 0, weight decay 0.01,
clipping at 1). The held-out loss (--eval-sequences 64 fixed windows) is compared with a
bigram model of the training tokens (add-α smoothing, the best α of 0.001-1 on the held-out
stream itself: a flattering baseline). Then the trained checkpoint goes to the ordinary
inference executable of the same spec (`xfc examples/gpt2.xf -D ... -o gpt2-small`) for
samples (the prompt's bytes in with --tokens, the generated ids decoded here as UTF-8). Writes docs/training-loss.png and the marked section of docs/training.md.
"""
import argparse
import collections
import csv
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
HP = {"L": 4, "H": 4, "d_e": 256, "d_mlp": 1024, "N_V": 256, "ℓ_max": 256}
BEGIN = "<!-- BEGIN xf-training-run (written by test/bench/run_training_text.py) -->"
END = "<!-- END xf-training-run -->"


def run(cmd, **kw):
    print("+", " ".join(map(str, cmd)), file=sys.stderr)
    return subprocess.run(cmd, check=True, text=True, **kw)


def bigram_loss(train, held):
    """Mean −log p(next | previous) over the held-out stream, add-α smoothed counts."""
    V = 256
    pairs = collections.Counter(zip(train[:-1], train[1:]))
    firsts = collections.Counter(train[:-1])
    best = None
    for alpha in (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0):
        total = 0.0
        for a, b in zip(held[:-1], held[1:]):
            total -= math.log((pairs.get((a, b), 0) + alpha) / (firsts.get(a, 0) + alpha * V))
        loss = total / (len(held) - 1)
        best = min(best, (loss, alpha)) if best else (loss, alpha)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--workdir")
    ap.add_argument("--no-docs", action="store_true")
    a = ap.parse_args()
    work = pathlib.Path(a.workdir or tempfile.mkdtemp(prefix="xf-training-run-"))
    work.mkdir(parents=True, exist_ok=True)
    xfc = os.path.join(a.build, "bin", "xfc")
    defines = [x for k, v in HP.items() for x in ("-D", f"{k}={v}")]

    text = work / "kjv.txt"
    try:
        raw = run(["bible", "gen1:1-rev22:21"], capture_output=True).stdout
    except FileNotFoundError:
        sys.exit("run_training_text.py: needs Debian's bible-kjv (apt-get install bible-kjv)")
    text.write_text(re.sub(r"(?m)^ +\d+ ", "", raw))
    ids = list(text.read_bytes())
    data = work / "kjv.ids"
    data.write_text(" ".join(map(str, ids)) + "\n")

    trainer, exe = work / "trainer", work / "gpt2-small"
    run([xfc, ROOT / "examples" / "gpt2.xf", "--train", *defines, "-o", trainer])
    run([xfc, ROOT / "examples" / "gpt2.xf", *defines, "-o", exe])
    ckpt, log = work / "kjv-small.safetensors", work / "log.csv"
    run([trainer, "--data", data, "--steps", str(a.steps),
         "--batch", str(a.batch), "--seq-len", str(a.seq_len), "--lr", str(a.lr),
         "--warmup", "100", "--held-out", "0.05", "--eval-every", str(a.eval_every),
         "--eval-sequences", "64", "--seed", "1", "--threads", str(a.threads),
         "--save", ckpt, "--log", log])
    with open(log) as f:
        rows = list(csv.DictReader(f))

    held = len(ids) * 5 // 100
    train_ids, held_ids = ids[:len(ids) - held], ids[len(ids) - held:]
    bigram, alpha = bigram_loss(train_ids, held_ids)
    unigram = collections.Counter(train_ids)
    uni = -sum(math.log((unigram.get(t, 0) + 1) / (len(train_ids) + 256)) for t in held_ids)
    uni /= len(held_ids)

    samples = []
    for prompt in ("And God said", "In the beginning", "The LORD is my shepherd"):
        out = run([exe, "--weights", ckpt, "--tokens", ",".join(map(str, prompt.encode())),
                   "--max-new-tokens", "160", "--temperature", "0.8", "--seed", "1",
                   "--threads", str(a.threads)], capture_output=True).stdout
        generated = bytes(int(t) for t in out.splitlines()[0].split(","))
        samples.append(prompt + generated.decode("utf-8", errors="replace"))

    steps = [int(r["step"]) for r in rows]
    loss = [float(r["loss"]) for r in rows]
    evals = [(int(r["step"]), float(r["eval_loss"])) for r in rows if r["eval_loss"]]
    rate = float(rows[-1]["tokens_per_s"])
    tokens = a.steps * a.batch * a.seq_len
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    smooth = np.convolve(loss, np.ones(20) / 20, mode="valid")
    ax.plot(steps, loss, color="#bbbbbb", linewidth=0.6, label="training loss (per step)")
    ax.plot(steps[19:], smooth, color="#1f77b4", label="training loss (mean of 20 steps)")
    ax.plot(*zip(*evals), "o-", color="#d62728", label="held-out loss")
    ax.axhline(bigram, color="#2ca02c", linestyle="--", label=f"bigram baseline ({bigram:.2f})")
    ax.axhline(uni, color="#9467bd", linestyle=":", label=f"unigram ({uni:.2f})")
    ax.set_xlabel("step (batch of %d × %d tokens)" % (a.batch, a.seq_len))
    ax.set_ylabel("next-token loss (nats)")
    ax.set_ylim(0, 6)
    ax.set_title("xf trainer: GPT-2 L=4, d_e=256 on the KJV Bible")
    ax.legend()
    fig.tight_layout()
    plot = work / "training-loss.png"
    fig.savefig(plot, dpi=110)

    lines = [BEGIN, "",
             f"GPT-2 (examples/gpt2.xf, L = 4, H = 4, d_e = 256, d_mlp = 1024; bytes: N_V = 256) "
             f"from random weights on the King James Bible ({len(ids):,} bytes, the last 5 % "
             f"held out): {a.steps} AdamW steps of {a.batch} × {a.seq_len} tokens "
             f"({tokens:,} tokens, ~{tokens / len(train_ids):.1f} epochs), lr {a.lr:g} with 100 "
             f"warm-up steps and the cosine, {a.threads} threads: {rate:.0f} tokens/s on a shared "
             f"machine.", "",
             "| | held-out loss (nats/byte) |", "|---|---|",
             f"| unigram (add-one) | {uni:.3f} |",
             f"| bigram (add-α, α = {alpha:g}, chosen on the held-out stream) | {bigram:.3f} |"]
    for step, value in evals:
        lines.append(f"| xf trainer after step {step} | {value:.3f} |")
    lines += ["", "![loss curve](training-loss.png)", "",
              "Samples from the saved checkpoint through the ordinary inference executable "
              "(`xfc examples/gpt2.xf -D L=4 -D H=4 -D d_e=256 -D d_mlp=1024 -D N_V=256 "
              "-D ℓ_max=256 -o gpt2-small`, the prompt's bytes as `--tokens`, "
              "`--temperature 0.8 --seed 1 --max-new-tokens 160`, output bytes as UTF-8):", ""]
    for s in samples:
        lines += ["```", s, "```"]
    lines += ["", END]
    section = "\n".join(lines)
    print(section)
    if not a.no_docs:
        import shutil
        shutil.copy(plot, ROOT / "docs" / "training-loss.png")
        doc = ROOT / "docs" / "training.md"
        current = doc.read_text()
        if BEGIN in current and END in current:
            before, rest = current.split(BEGIN, 1)
            current = before + section + rest.split(END, 1)[1]
        else:
            current = current.rstrip("\n") + "\n\n## The real run\n\n" + section + "\n"
        doc.write_text(current)


if __name__ == "__main__":
    main()
