#!/usr/bin/env python3
"""Checks libxfrt's tokenizers (through xf-tokenize) against Hugging Face `tokenizers`.

    check_against_hf.py XF_TOKENIZE GPT2_DIR MINILM_VOCAB_TXT CORPUS [--sweep | --sweep-only]

GPT2_DIR holds vocab.json and merges.txt. For every text of CORPUS (hard_strings.txt format)
plus generated mixes of its characters, the ids must be identical to HF's (GPT-2:
BPE.from_file + ByteLevel(add_prefix_space=False); WordPiece: BertWordPieceTokenizer with
lowercase=True), GPT-2 decoding must return the exact bytes, and WordPiece decoding must match
HF's decode. Texts that are not valid UTF-8 are compared, for WordPiece, with HF on the text
decoded with errors="replace", and for GPT-2 only round-tripped. --sweep also encodes every
code point in context (16 per text); --sweep-only does only that. Exit 77 (skipped) when `tokenizers`
or the data files are missing.
"""
import os
import random
import re
import subprocess
import sys

SKIP = 77


def parse_corpus(path):
    texts = []
    for raw in open(path, encoding="utf-8").read().split("\n"):
        if not raw or raw.startswith("# "):
            continue
        out = bytearray()
        i = 0
        while i < len(raw):
            c = raw[i]
            if c != "\\":
                out += c.encode("utf-8")
                i += 1
                continue
            nxt = raw[i + 1]
            if nxt in "ntr\\":
                out += {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\"}[nxt]
                i += 2
            elif nxt == "x":
                out.append(int(raw[i + 2:i + 4], 16))
                i += 4
            elif nxt == "u":
                end = raw.index("}", i)
                out += chr(int(raw[i + 3:end], 16)).encode("utf-8", "surrogatepass")
                i = end + 1
            else:
                raise ValueError(f"bad escape in {raw!r}")
        texts.append(bytes(out))
    return texts


def mixes(texts, count, seed):
    """Random strings from the corpus's characters and whitespace, to reach odd contexts."""
    chars = sorted({ch for t in texts for ch in t.decode("utf-8", "replace")})
    chars += [" ", " ", " ", "  ", "\t", "\n", "'", "s", "'s", "1", "a"]
    rng = random.Random(seed)
    return ["".join(rng.choice(chars) for _ in range(rng.randint(1, 40))).encode("utf-8")
            for _ in range(count)]


def run_xf(args, lines):
    proc = subprocess.run(args, input="\n".join(lines) + "\n", capture_output=True,
                          text=True, check=False)
    out = proc.stdout.split("\n")[:-1]
    if len(out) != len(lines):
        sys.exit(f"error: {' '.join(args)}: {len(out)} output lines for {len(lines)} inputs; "
                 f"stderr: {proc.stderr.strip()}")
    return out


def ids_of(line):
    return [int(x) for x in line.split()] if line and not line.startswith("error") else line


def show(text):
    return repr(text if isinstance(text, str) else text)[:120]


def main():
    argv = [a for a in sys.argv[1:] if a not in ("--sweep", "--sweep-only")]
    sweep = "--sweep" in sys.argv or "--sweep-only" in sys.argv
    if len(argv) != 4:
        sys.exit(__doc__)
    xf, gpt2_dir, vocab_txt, corpus = argv
    vocab_json = os.path.join(gpt2_dir, "vocab.json")
    merges = os.path.join(gpt2_dir, "merges.txt")
    try:
        from tokenizers import BertWordPieceTokenizer, Tokenizer, decoders, models
        from tokenizers import pre_tokenizers
    except ImportError:
        print("skipped: Python package `tokenizers` is not installed")
        return SKIP
    for f in (vocab_json, merges, vocab_txt):
        if not os.path.exists(f):
            print(f"skipped: {f} is missing")
            return SKIP

    gpt2 = Tokenizer(models.BPE.from_file(vocab_json, merges))
    gpt2.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    gpt2.decoder = decoders.ByteLevel()
    bert = BertWordPieceTokenizer(vocab_txt, lowercase=True)

    texts = parse_corpus(corpus)
    texts += mixes(texts, 2000, seed=7)
    if "--sweep-only" in sys.argv:
        texts = []
    if sweep:
        # Every code point in a few contexts, 16 code points per text.
        cps = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
        for i in range(0, len(cps), 16):
            texts.append(" ".join(f"a{c}b {c}{c}1{c}" for c in cps[i:i + 16]).encode("utf-8"))
    valid = []
    for t in texts:
        try:
            valid.append(t.decode("utf-8"))
        except UnicodeDecodeError:
            valid.append(None)
    hexes = [t.hex() for t in texts]
    failures = 0

    def fail(what, text, got, want):
        nonlocal failures
        failures += 1
        if failures <= 40:
            print(f"MISMATCH {what} {show(text)}\n  xf: {got}\n  hf: {want}")

    # GPT-2: ids identical on valid UTF-8; exact byte round trip on everything.
    xf_ids = [ids_of(x) for x in run_xf([xf, "--hex", "gpt2", vocab_json, merges], hexes)]
    hf_valid = [s for s in valid if s is not None]
    hf_ids = iter(e.ids for e in gpt2.encode_batch(hf_valid, add_special_tokens=False))
    compared = 0
    for t, s, got in zip(texts, valid, xf_ids):
        if not isinstance(got, list):
            fail("gpt2-encode", t, got, "(no error)")
            continue
        if s is not None:
            want = next(hf_ids)
            compared += 1
            if got != want:
                fail("gpt2", s, got, want)
    decoded = run_xf([xf, "--hex", "--decode", "gpt2", vocab_json, merges],
                     [" ".join(map(str, i)) if isinstance(i, list) else "" for i in xf_ids])
    for t, d in zip(texts, decoded):
        if d != t.hex():
            fail("gpt2-roundtrip", t, d, t.hex())
    print(f"gpt2: {compared} texts compared with HF, {len(texts)} round-tripped")

    # WordPiece: ids identical (invalid UTF-8 → HF on the U+FFFD-replaced text); decode same.
    xf_ids = [ids_of(x) for x in run_xf([xf, "--hex", "wordpiece", vocab_txt], hexes)]
    replaced = [t.decode("utf-8", "replace") for t in texts]
    hf_enc = bert.encode_batch(replaced)
    for s, got, enc in zip(replaced, xf_ids, hf_enc):
        if got != enc.ids:
            fail("wordpiece", s, got, enc.ids)
    got_dec = run_xf([xf, "--decode", "wordpiece", vocab_txt],
                     [" ".join(map(str, e.ids)) for e in hf_enc])
    want_dec = bert.decode_batch([e.ids for e in hf_enc])
    for s, got, want in zip(replaced, got_dec, want_dec):
        if "\n" not in want and got != want:
            fail("wordpiece-decode", s, got, want)
    print(f"wordpiece: {len(texts)} texts compared with HF (encode and decode)")

    if failures:
        print(f"FAILED: {failures} mismatches")
        return 1
    print("all identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
