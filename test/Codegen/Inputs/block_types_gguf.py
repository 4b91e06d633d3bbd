#!/usr/bin/env python3
"""A GGUF whose tensors only name examples/llama.xf's weights and give their block types
(token_embd Q8_0, attention Q4_0, MLP Q4_1): all that xfc --quantized-like reads.
Each tensor holds one block of 32 zeros. usage: block_types_gguf.py OUT.gguf [LAYERS]"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "gguf"))
import gguf_format as gf  # noqa: E402

BYTES = {gf.Q8_0: 34, gf.Q4_0: 18, gf.Q4_1: 20}
layers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
names = [("token_embd.weight", gf.Q8_0)]
for l in range(layers):
    names += [(f"blk.{l}.attn_{p}.weight", gf.Q4_0) for p in ("q", "k", "v", "output")]
    names += [(f"blk.{l}.ffn_{p}.weight", gf.Q4_1) for p in ("gate", "up", "down")]
gf.write_gguf(sys.argv[1], [], [(n, t, [32], bytes(BYTES[t])) for n, t in names])
