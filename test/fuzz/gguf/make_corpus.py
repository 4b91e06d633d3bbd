#!/usr/bin/env python3
"""Writes the GGUF fuzzer's seed corpus: small valid files that reach every part of the reader.

    make_corpus.py DIR

all-types.gguf   one metadata value of each type (scalars, strings, arrays of numbers and of
                 strings) and tensors of F32, F16, BF16 and every block type xf dequantizes (validated,
                 not dequantized), in 1 to 4 dims;
tokenizer.gguf   a byte-level BPE vocabulary (control tokens, 256 byte tokens, a few merges),
                 pre-tokenizer "smollm", bos/eos ids, a 64-byte general.alignment;
empty.gguf       no key-values, no tensors.
"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "gguf"))
import gguf_format as gf  # noqa: E402


def byte_level_char(b):
    printable = lambda c: 33 <= c <= 126 or 161 <= c <= 172 or 174 <= c <= 255  # noqa: E731
    return chr(b) if printable(b) else chr(256 + sum(not printable(c) for c in range(b)))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    meta = [("u8", gf.U8, 7), ("i8", gf.I8, -7), ("u16", gf.U16, 700), ("i16", gf.I16, -700),
            ("u32", gf.U32, 70000), ("i32", gf.I32, -70000), ("f32", gf.VF32, 0.5),
            ("bool", gf.BOOL, True), ("string", gf.STRING, "llama"), ("u64", gf.U64, 2**40),
            ("i64", gf.I64, -2**40), ("f64", gf.F64, 1e-300),
            ("ints", gf.ARRAY, (gf.I32, [1, -2, 3])), ("floats", gf.ARRAY, (gf.VF32, [0.5, 2.0])),
            ("strings", gf.ARRAY, (gf.STRING, ["a", "", "\u00e9"]))]
    q_blocks = lambda n, size: rng.integers(0, 256, n * size, dtype=np.uint8).tobytes()  # noqa
    tensors = [("f32", gf.F32, [3, 2], rng.standard_normal(6).astype("<f4").tobytes()),
               ("f16", gf.F16, [4], rng.standard_normal(4).astype("<f2").tobytes()),
               ("bf16", gf.BF16, [2, 1, 1], bytes(4)),
               ("q8_0", gf.Q8_0, [32, 2], q_blocks(2, 34)),
               ("q4_0", gf.Q4_0, [64], q_blocks(2, 18)),
               ("q4_1", gf.Q4_1, [32, 1, 1, 1], q_blocks(1, 20)),
               ("q5_0", gf.Q5_0, [32], q_blocks(1, 22)),
               ("q5_1", gf.Q5_1, [64], q_blocks(2, 24)),
               ("iq4_nl", gf.IQ4_NL, [32], q_blocks(1, 18)),
               ("q2_k", gf.Q2_K, [256], q_blocks(1, 84)),
               ("q3_k", gf.Q3_K, [256], q_blocks(1, 110)),
               ("q4_k", gf.Q4_K, [256], q_blocks(1, 144)),
               ("q5_k", gf.Q5_K, [256, 1], q_blocks(1, 176)),
               ("q6_k", gf.Q6_K, [256], q_blocks(1, 210)),
               ("iq4_xs", gf.IQ4_XS, [256], q_blocks(1, 136))]
    gf.write_gguf(os.path.join(out, "all-types.gguf"), meta, tensors)

    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokens += [byte_level_char(b) for b in range(256)]
    merges = ["\u0120 t", "h e", "\u0120t he", "\u0120 \u0120", "1 2"]
    tokens += [m.replace(" ", "") for m in merges]
    types = [3, 3, 3] + [1] * (len(tokens) - 3)
    meta = [("general.alignment", gf.U32, 64),
            ("tokenizer.ggml.model", gf.STRING, "gpt2"),
            ("tokenizer.ggml.pre", gf.STRING, "smollm"),
            ("tokenizer.ggml.tokens", gf.ARRAY, (gf.STRING, tokens)),
            ("tokenizer.ggml.token_type", gf.ARRAY, (gf.I32, types)),
            ("tokenizer.ggml.merges", gf.ARRAY, (gf.STRING, merges)),
            ("tokenizer.ggml.bos_token_id", gf.U32, 1),
            ("tokenizer.ggml.eos_token_id", gf.U32, 2)]
    gf.write_gguf(os.path.join(out, "tokenizer.gguf"), meta,
                  [("w", gf.Q4_1, [32], q_blocks(1, 20))], alignment=64)

    with open(os.path.join(out, "empty.gguf"), "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 0))


if __name__ == "__main__":
    main()
