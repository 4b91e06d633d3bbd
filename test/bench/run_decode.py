#!/opt/xf-venv/bin/python
"""Time GPT-2-small greedy decoding with a KV cache: xf (f32, bf16) beside PyTorch and ONNX Runtime.

Usage: test/bench/run_decode.py [--exe GPT2] [--exe-bf16 GPT2] [--build DIR] [--rounds N]
                                [--threads N] [--context L] [--new-tokens N] [--no-docs]
                                [--workdir DIR] [--tuning-db DB]

1. Builds `xfc examples/gpt2.xf` twice, f32 and `--weight-type=bf16` (or takes --exe /
   --exe-bf16), writes one random GPT-2-small F32 checkpoint with the oracle's writer
   (benchlib.write_checkpoint) and a BF16 copy of it (round to nearest even), and draws a
   prompt of --context random tokens. Both are compiled with `--tuning-db none` (default
   schedules); with --tuning-db DB (from `xfc tune examples/gpt2.xf`) a third, f32 build with
   that database is timed as "xf f32 tuned".
2. Starts one worker per other decoder (test/bench/decode/decode_worker.py, /opt/hf-venv):
   PyTorch GPT2LMHeadModel fp32 and bf16 (a manual greedy loop with past_key_values) and ONNX
   Runtime on that model exported with past key/values (prefill + decoder-with-past models).
   All read the SAME F32 checkpoint and get the same prompt.
3. Checks that all produce the same greedy continuation: the fp32 decoders (xf f32, PyTorch,
   ONNX Runtime) must agree on at least --min-agree leading ids, else exit 1 (it would not be
   the same model); the bf16 ones are reported against xf f32.
4. Runs --rounds rounds. Each reads the load average and measures the FMA peak and read
   bandwidth (MachinePeak.cpp, via benchlib), then each decoder generates --new-tokens tokens
   once after the prompt, in an order that rotates every round. xf is one process per run
   (`--max-new-tokens N --eos none --temperature 0`; its stderr summary gives the decode time);
   the workers time each decode step (forward with the cache + argmax). ms/token = decode time
   / (N − 1) steps: the first new token comes from the prefill, which is not counted.
   Reports the min and the median over the rounds.
5. Resident memory (--print-memory, VmHWM) of xf f32 and bf16 against the checkpoint it read,
   a per-kernel split of one xf decode (--profile --trace-out; decode steps only, from the
   trace), the bandwidth bound (bytes of parameters / measured read bandwidth), a table on
   stdout and (unless --no-docs) the section between the markers in docs/bench.md and
   docs/bench-decode.png.
Everything runs with OMP_NUM_THREADS / MKL_NUM_THREADS / HL_NUM_THREADS = --threads.
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from benchlib import (ROOT, Worker, build_peak, compile_xf, cpu_model, log,  # noqa: E402
                      loadavg, measure_bandwidth, measure_peak, random_tokens, replace_doc_section,
                      write_checkpoint, xf_version)

WORKER = ROOT / "test" / "bench" / "decode" / "decode_worker.py"
BEGIN = "<!-- BEGIN xf-bench-decode (written by test/bench/run_decode.py) -->"
END = "<!-- END xf-bench-decode -->"
TARGET_MS = 30.0      # the issue: fp32 decode ≤ 30 ms/token at context 128
TARGET_MEM = 1.20     # resident memory ≤ checkpoint + 20 %
DECODERS = ("xf f32", "xf bf16", "PyTorch fp32", "PyTorch bf16", "ONNX Runtime fp32")
WORKERS = {"PyTorch fp32": "torch", "PyTorch bf16": "torch-bf16", "ONNX Runtime fp32": "ort"}
MiB = 1 << 20
L, D, DM, NV = 12, 768, 3072, 50257
# weight bytes one call of each GEMM reads (f32), in program order of examples/gpt2.xf
GEMMS = (("q, k, v projection (c_attn)", D * 3 * D), ("attention output (attn.c_proj)", D * D),
         ("MLP up + GELU (c_fc)", D * DM), ("MLP down (mlp.c_proj)", DM * D),
         ("unembedding x·W_eᵀ", D * NV))


# ---------------------------------------------------------------- checkpoint

def safetensors_header(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(n))


def narrowed(name, shape):
    """Whether --weight-type=bf16 keeps this tensor in bf16: GEMM weights and the embedding
    table (W_e, also the tied unembedding), not the position table, norms or biases."""
    return len(shape) == 2 and name != "wpe.weight"


def param_bytes(header):
    """(f32 bytes, bytes with the GEMM weights and W_e in bf16) of all parameters."""
    f32 = bf16 = 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        n = int(np.prod(t["shape"]))
        f32 += 4 * n
        bf16 += (2 if narrowed(name, t["shape"]) else 4) * n
    return f32, bf16


def write_bf16_copy(src, dst):
    """The F32 checkpoint with every tensor rounded to BF16 (nearest even), as .safetensors."""
    header = safetensors_header(src)
    with open(src, "rb") as f:
        base = 8 + int.from_bytes(f.read(8), "little")
    raw = np.memmap(src, dtype=np.uint8, mode="r")
    out, blobs, off = {}, [], 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        u = np.frombuffer(raw[base + a:base + b], dtype="<u4").astype(np.uint64)
        h = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
        out[name] = {"dtype": "BF16", "shape": t["shape"], "data_offsets": [off, off + h.nbytes]}
        blobs.append(h.tobytes())
        off += h.nbytes
    text = json.dumps(out).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for b in blobs:
            f.write(b)
    return dst


# ---------------------------------------------------------------- xf

XF_DECODE = re.compile(r"prefill (\d+) tokens in ([0-9.]+) ms.*decode (\d+) tokens in "
                       r"([0-9.]+) ms \(([0-9.]+) ms/token")
XF_MEMORY = re.compile(r"peak resident ([0-9.]+) MiB \(VmHWM\), checkpoint ([0-9.]+) MiB")


def run_xf(exe, weights, tokens, threads, new, env, extra=()):
    """{"ids", "prefill_ms", "ms_per_token", "stderr"} of one generation."""
    r = subprocess.run([str(exe), "--weights", str(weights), "--tokens", tokens, "--threads",
                        str(threads), "--max-new-tokens", str(new), "--eos", "none",
                        "--temperature", "0", *extra], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"xf executable failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    m = XF_DECODE.search(r.stderr)
    if not m:
        raise SystemExit(f"no 'prefill … decode … ms/token' in the xf output: {r.stderr[-500:]}")
    ids = [int(x) for x in re.split(r"[,\s]+", r.stdout.strip()) if x]
    return {"ids": ids, "prefill_ms": float(m.group(2)), "ms_per_token": float(m.group(5)),
            "steps": int(m.group(3)), "stderr": r.stderr}


def xf_memory(exe, weights, tokens, threads, new, env):
    err = run_xf(exe, weights, tokens, threads, new, env, ["--print-memory"])["stderr"]
    m = XF_MEMORY.search(err)
    if not m:
        raise SystemExit(f"no 'peak resident … checkpoint …' in the xf output: {err[-500:]}")
    return float(m.group(1)), float(m.group(2))


def decode_profile(exe, weights, tokens, threads, new, env, workdir):
    """Per kernel, ms per decode step over the decode steps only (trace events after the first
    unembedding call, which ends the prefill): [(kernel, role, calls/step, ms/step, GB/s)],
    kernel ms per step, steps."""
    trace = workdir / f"{exe.name}-trace.json"
    run = run_xf(exe, weights, tokens, threads, new, env, ["--profile", "--trace-out", str(trace)])
    events = json.loads(trace.read_text())["traceEvents"]
    gemms = []
    for e in events:
        if e["args"].get("op") == "xf.gemm" and e["name"] not in gemms:
            gemms.append(e["name"])
    unembed = gemms[-1]
    first_end = next(e["ts"] + e["dur"] for e in events if e["name"] == unembed)
    steps = sum(1 for e in events if e["name"] == unembed) - 1
    agg, order = {}, []
    for e in events:
        if e["ts"] < first_end:
            continue
        if e["name"] not in agg:
            order.append(e["name"])
            agg[e["name"]] = [0, 0.0, e["args"].get("op", ""), e["args"].get("loc", "")]
        agg[e["name"]][0] += 1
        agg[e["name"]][1] += e["dur"] / 1e3
    bf16 = "bf16" in exe.name
    rows = []
    for name in sorted(order, key=lambda n: -agg[n][1]):
        calls, ms, op, loc = agg[name]
        role, gbs = op.removeprefix("xf."), None
        if name in gemms and len(gemms) == len(GEMMS):
            role, wbytes = GEMMS[gemms.index(name)]
            wbytes *= 2 if bf16 else 4
            gbs = wbytes * calls / (ms / 1e3) / 1e9
        where = re.search(r':(\d+):(\d+)', loc)
        if where:
            role += f" — gpt2.xf:{where.group(1)}"
        rows.append((name, role, calls / steps, ms / steps, gbs))
    return rows, sum(r[3] for r in rows), steps, run["ms_per_token"]


# ---------------------------------------------------------------- report

def leading_agree(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def fmt(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def make_table(results, bound):
    xf = results["xf f32"]
    lines = ["| decoder | ms/token min | ms/token median | tokens/s (min) | vs bandwidth bound "
             "(min) | xf f32 speedup (min) | xf f32 speedup (median) | prefill ms (median) |",
             "|---|---|---|---|---|---|---|---|"]
    for fw in DECODERS:
        r = results[fw]
        b = bound["bf16" if "bf16" in fw else "f32"]
        lines.append(f"| {fw} | {fmt(r['min'])} | {fmt(r['median'])} | {1e3 / r['min']:.1f} | "
                     f"{r['min'] / b:.1f}× | {r['min'] / xf['min']:.2f}× | "
                     f"{r['median'] / xf['median']:.2f}× | {fmt(r['prefill'])} |")
    return "\n".join(lines)


def plot(results, bound, meta, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(8.5, 4.4))
    xs = range(len(DECODERS))
    mins = [results[f]["min"] for f in DECODERS]
    meds = [results[f]["median"] for f in DECODERS]
    ax.bar([x - 0.2 for x in xs], mins, 0.4, label="min")
    ax.bar([x + 0.2 for x in xs], meds, 0.4, label="median of rounds")
    for x, v in zip(xs, mins):
        ax.text(x - 0.2, v, fmt(v), ha="center", va="bottom", fontsize=8)
    for x, v in zip(xs, meds):
        ax.text(x + 0.2, v, fmt(v), ha="center", va="bottom", fontsize=8)
    ax.axhline(TARGET_MS, color="k", ls="--", lw=1, label=f"target fp32 {TARGET_MS:.0f} ms")
    ax.axhline(bound["f32"], color="r", ls=":", lw=1,
               label=f"f32 bandwidth bound {bound['f32']:.1f} ms")
    ax.axhline(bound["bf16"], color="m", ls=":", lw=1,
               label=f"bf16 bandwidth bound {bound['bf16']:.1f} ms")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([d.replace(" ", "\n", 1) for d in DECODERS], fontsize=8)
    ax.set_ylabel("ms per new token (lower is better)")
    ax.set_title(f"GPT-2 small greedy decode, KV cache, context {meta['context']} + "
                 f"{meta['new']} new tokens, {meta['threads']} threads\n{meta['cpu']}, read "
                 f"bandwidth {meta['bw_text']}, load avg {meta['load_text']}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--exe", help="a GPT-2-small f32 xf executable (default: build one)")
    p.add_argument("--exe-bf16", help="the same with --weight-type=bf16 (default: build one)")
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--hf-python", default="/opt/hf-venv/bin/python")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--min-agree", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workdir")
    p.add_argument("--no-docs", action="store_true")
    p.add_argument("--tuning-db", help="also time an f32 build with this tuning database")
    args = p.parse_args()
    if args.rounds < 5:
        p.error("--rounds must be at least 5")
    if args.new_tokens < max(2, args.min_agree):
        p.error("--new-tokens must be at least --min-agree and 2")

    t_start = time.time()
    tmp = tempfile.TemporaryDirectory(prefix="xf-bench-decode-")
    workdir = pathlib.Path(args.workdir or tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "HL_NUM_THREADS"):
        env[k] = str(args.threads)
    start_load = loadavg()
    n, th = args.new_tokens, args.threads

    # 1. executables, checkpoints, prompt
    log("compiling examples/gpt2.xf (f32, bf16) ...")
    exe = (pathlib.Path(args.exe).resolve() if args.exe
           else compile_xf(args.build, workdir / "gpt2", ["--tuning-db", "none"]))
    exe16 = (pathlib.Path(args.exe_bf16).resolve() if args.exe_bf16
             else compile_xf(args.build, workdir / "gpt2-bf16",
                             ["--weight-type=bf16", "--tuning-db", "none"]))
    weights = workdir / "gpt2.safetensors"
    log("writing a random GPT-2-small checkpoint (oracle writer) and its BF16 copy ...")
    write_checkpoint(weights, args.seed)
    weights16 = write_bf16_copy(weights, workdir / "gpt2-bf16.safetensors")
    f32_bytes, bf16_bytes = param_bytes(safetensors_header(weights))
    tokens = random_tokens(args.seed, args.context)
    xf_exes = {"xf f32": exe, "xf bf16": exe16}
    if args.tuning_db:
        log(f"compiling examples/gpt2.xf (f32) with --tuning-db {args.tuning_db} ...")
        xf_exes["xf f32 tuned"] = compile_xf(args.build, workdir / "gpt2-tuned",
                                             ["--tuning-db", args.tuning_db])
        global DECODERS
        DECODERS = DECODERS[:2] + ("xf f32 tuned",) + DECODERS[2:]

    # 2. the other decoders, each in its own process
    log("starting the PyTorch fp32/bf16 and ONNX Runtime workers (model build, ONNX export) ...")
    workers = {}
    try:
        for name, fw in WORKERS.items():
            workers[name] = Worker(name, [args.hf_python, str(WORKER), "--framework", fw,
                                          "--weights", str(weights), "--tokens", tokens,
                                          "--threads", str(th), "--workdir", str(workdir)],
                                   workdir / f"{fw}.log", env)
        for w in workers.values():
            w.ready()
            log(f"  {w.name} ready after {w.info['setup_s']:.0f} s")

        # 3. same model? (and warm-up)
        ids = {name: run_xf(e, weights, tokens, th, n, env)["ids"] for name, e in xf_exes.items()}
        ids["xf bf16, BF16 checkpoint"] = run_xf(exe16, weights16, tokens, th, n, env)["ids"]
        for name, w in workers.items():
            ids[name] = w.ask(f"generate {n}")["ids"]
        ref = ids["xf f32"]
        agree = {name: leading_agree(ref, v) for name, v in ids.items() if name != "xf f32"}
        log(f"greedy ids of xf f32: {ref}")
        for name, a in agree.items():
            log(f"  {name}: {a}/{n} leading ids equal to xf f32's")
        bad = {k: a for k, a in agree.items()
               if "bf16" not in k and a < min(args.min_agree, n)}
        if bad:
            raise SystemExit(f"not the same model: {bad} (need {args.min_agree} equal ids)")

        # 4. timing
        peak_exe = build_peak(workdir, args.build)
        per_round = {fw: [] for fw in DECODERS}
        prefill = {fw: [] for fw in DECODERS}
        loads, peaks = [], []
        # (bound at the bandwidth measured just before the run) / (the run's ms per token)
        paired = {fw: [] for fw in xf_exes}
        for rnd in range(args.rounds):
            loads.append(loadavg()[0])
            peak = measure_peak(peak_exe, th)
            if peak:
                peaks.append(peak)
            k = rnd % len(DECODERS)
            for fw in DECODERS[k:] + DECODERS[:k]:
                time.sleep(0.3)  # let the previous decoder's spinning threads go to sleep
                if fw in xf_exes:
                    bw = measure_bandwidth(peak_exe, th)
                    r = run_xf(xf_exes[fw], weights, tokens, th, n, env)
                    ms, pre = r["ms_per_token"], r["prefill_ms"]
                    if bw:
                        step = bf16_bytes if "bf16" in fw else f32_bytes
                        paired[fw].append(step / (bw * 1e9) * 1e3 / ms)
                else:
                    r = workers[fw].ask(f"generate {n}")
                    ms, pre = statistics.mean(r["step_ms"]), r["prefill_ms"]
                per_round[fw].append(ms)
                prefill[fw].append(pre)
            log(f"  round {rnd + 1}/{args.rounds}: " + ", ".join(
                f"{fw} {per_round[fw][-1]:.1f}" for fw in DECODERS)
                + f" ms/token; load {loads[-1]:.2f}"
                + (f", read {peaks[-1]['read_gbs']:.1f} GB/s, FMA peak "
                   f"{peaks[-1]['gflops']:.0f} GFLOP/s" if peak else ""))
        loads.append(loadavg()[0])
        log("profiling PyTorch fp32 ...")
        torch_ops = workers["PyTorch fp32"].ask(f"profile {n}")["ops"]
    finally:
        for w in workers.values():
            w.close()

    # 5. memory, per-kernel split
    log("resident memory and per-kernel profile of xf ...")
    memory = [("xf f32", "F32", *xf_memory(exe, weights, tokens, th, n, env)),
              ("xf bf16", "F32 (narrowed at load)", *xf_memory(exe16, weights, tokens, th, n, env)),
              ("xf bf16", "BF16", *xf_memory(exe16, weights16, tokens, th, n, env))]
    profiles = {name: decode_profile(e, weights, tokens, th, n, env, workdir)
                for name, e in xf_exes.items()}

    results = {fw: {"min": min(per_round[fw]), "median": statistics.median(per_round[fw]),
                    "prefill": statistics.median(prefill[fw])} for fw in DECODERS}
    bws = sorted(x["read_gbs"] for x in peaks) or [float("nan")]
    gf = sorted(x["gflops"] for x in peaks) or [float("nan")]
    bw_med, bw_max = statistics.median(bws), bws[-1]
    bound = {"f32": f32_bytes / (bw_med * 1e9) * 1e3, "bf16": bf16_bytes / (bw_med * 1e9) * 1e3}
    bound_best = {"f32": f32_bytes / (bw_max * 1e9) * 1e3,
                  "bf16": bf16_bytes / (bw_max * 1e9) * 1e3}

    # 6. report
    versions = {"xf": xf_version()}
    for w in workers.values():
        versions.update(w.info["versions"])
    table = make_table(results, bound)
    print()
    print(table)
    cpu = cpu_model()
    load_text = f"{min(loads):.1f}–{max(loads):.1f}"
    bw_text = f"{bws[0]:.1f}–{bws[-1]:.1f} GB/s (median {bw_med:.1f})"
    xf, xf16 = results["xf f32"], results["xf bf16"]
    # The runtime sizes the KV cache for prompt + new tokens (rounded up to 16 positions).
    kv_positions = -(-(args.context + args.new_tokens) // 16) * 16
    kv_mib = 2 * L * kv_positions * D * 4 / MiB
    lines = [
        BEGIN,
        "## Generation: GPT-2 small greedy decode with a KV cache",
        "",
        "Run: `test/bench/run_decode.py` (options `--exe`, `--exe-bf16`, `--rounds`, `--threads`, "
        "`--context`, `--new-tokens`, `--tuning-db`, `--no-docs`; ≈7 min on a loaded machine). One random GPT-2-small F32 checkpoint "
        f"(the oracle's writer, `--seed {args.seed}`) is read by all: xf's `examples/gpt2.xf` "
        "executable built f32 and with `--weight-type=bf16` (GEMM weights and the embedding "
        "table narrowed to bfloat16 at load), both with default schedules (`--tuning-db none`)"
        + (", the f32 one again with a tuning database from `xfc tune` (**xf f32 tuned**)"
           if "xf f32 tuned" in xf_exes else "") + ", PyTorch's `GPT2LMHeadModel` in fp32 and cast to "
        "bf16 (`inference_mode`, `torch.set_num_threads"
        f"({th})`, a manual greedy loop: one prefill forward with `use_cache=True`, then one "
        "forward of input_ids [1, 1] with the previous `past_key_values` per token), and ONNX "
        "Runtime fp32 on that model exported with `torch.onnx.export` (opset 18, torch.export-"
        "based) as a prefill model and a decoder-with-past model (inputs "
        "`past_key_values.{i}.key/value` [1, 12, T, 64] with T dynamic, outputs "
        "`present.{i}.*`: the layout of Optimum's GPT-2 export; "
        f"`intra_op_num_threads={th}`, `inter_op_num_threads=1`, ORT_ENABLE_ALL; presents fed "
        "back as numpy arrays). Optimum itself is not used: `pip install optimum[onnxruntime]` "
        "would downgrade /opt/hf-venv's transformers 5 to 4.57 and its tokenizers. "
        f"Prompt: {args.context} random tokens; then {n} new tokens, greedy "
        f"(`--max-new-tokens {n} --eos none --temperature 0`). ms/token = time of the "
        f"{n - 1} decode steps / {n - 1} (the first new token comes from the prefill, which "
        "is not counted; the KV cache grows from "
        f"{args.context} to {args.context + n - 1} positions). PyTorch and ONNX Runtime run in "
        "long-lived processes (`test/bench/decode/decode_worker.py`, /opt/hf-venv, after a "
        "warm-up generation) and time each step (forward + argmax); xf is one process per run "
        "and reports its decode time on stderr. Each round reads the load average and measures "
        "FMA peak and read bandwidth (`MachinePeak.cpp`), then runs each decoder once, in "
        "rotating order.",
        "",
        f"Before timing, the greedy ids agree with xf f32's ({n} generated; xf f32, PyTorch "
        f"fp32 and ONNX Runtime must share ≥ {args.min_agree} leading ids): " + "; ".join(
            f"{k} {a}/{n}" for k, a in agree.items()) + ".",
        "",
        "### Latest run",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}, **{cpu}** (lscpu), {os.cpu_count()} cores, "
        f"{th} threads. Measured in the rounds: read bandwidth **{bw_text}**, FMA peak "
        f"{gf[0]:.0f}–{gf[-1]:.0f} GFLOP/s; 1-minute load average {load_text} at the round "
        f"starts ({start_load[0]:.1f} before the run; the benchmark itself accounts for "
        f"≈{th}, the rest is other work on the shared machine). {args.rounds} rounds, one "
        "generation per decoder per round; min = best round, median = median of rounds. "
        "Bandwidth bound = bytes of parameters read per token / median measured read bandwidth "
        f"({f32_bytes / 1e6:.0f} MB f32, {bf16_bytes / 1e6:.0f} MB with GEMM weights and W_e "
        f"in bf16 → {bound['f32']:.1f} ms f32, {bound['bf16']:.1f} ms bf16; at the best "
        f"bandwidth of the run {bound_best['f32']:.1f} / {bound_best['bf16']:.1f} ms). "
        "Speedup = decoder ms / xf f32 ms (> 1: xf f32 is faster). Prefill is for reference only "
        f"(xf: the process's first forward, which also faults in the mmap'd checkpoint; "
        "PyTorch: logits of all prompt rows). Versions: "
        + ", ".join(f"{k} {v}" for k, v in versions.items() if k != "torch_blas")
        + ("; PyTorch's BLAS is MKL, which on AMD CPUs does not take its AVX-512 code paths"
           if versions.get("torch_blas") == "MKL" and "AMD" in cpu else "") + ".",
        "",
        table,
        "",
        "Resident memory (`--print-memory`: peak VmHWM of the whole generation, the checkpoint "
        f"file mmap'd; it includes the KV cache, sized for {kv_positions} positions: {kv_mib:.0f} MiB):",
        "",
        "| executable | checkpoint | checkpoint MiB | peak resident MiB | resident / checkpoint |",
        "|---|---|---|---|---|",
    ]
    for name, ck, rss, ckpt in memory:
        lines.append(f"| {name} | {ck} | {ckpt:.1f} | {rss:.1f} | {rss / ckpt:.2f} |")
    lines += ["", "Above the checkpoint: " + "; ".join(
        f"{name} ({ck}) {rss - ckpt:.0f} MiB" for name, ck, rss, ckpt in memory)
        + f". The KV cache alone ({kv_mib:.0f} MiB for {kv_positions} positions) is "
        f"{100 * kv_mib / memory[0][3]:.0f} % of the F32 checkpoint and "
        f"{100 * kv_mib / memory[2][3]:.0f} % of the BF16 one. With the F32 checkpoint, the "
        "bf16 executable's peak counts the F32 file pages it read while narrowing (mapped, "
        "so in VmHWM) plus the bf16 copy."]
    pt16, pt32 = results["PyTorch bf16"], results["PyTorch fp32"]
    lines += [
        "",
        "**Targets** (the issue): fp32 decode ≤ "
        f"{TARGET_MS:.0f} ms/token at context {args.context}; bf16 faster still; resident "
        f"memory ≤ checkpoint + {100 * (TARGET_MEM - 1):.0f} %.",
        (f"- fp32 ≤ {TARGET_MS:.0f} ms/token: " + (
            f"**met**, best {fmt(xf['min'])} ms" if xf["min"] <= TARGET_MS else
            f"**not met**: best {fmt(xf['min'])} ms ({xf['min'] / TARGET_MS:.1f}× the target), "
            f"median {fmt(xf['median'])} ms")
         + f"; {xf['min'] / bound['f32']:.1f}× the bandwidth bound of {bound['f32']:.1f} ms "
         f"({f32_bytes / (xf['min'] / 1e3) / 1e9:.1f} GB/s of parameters streamed at the best "
         f"round, against {bw_med:.1f} GB/s measured)."),
        "- Paired with the read bandwidth measured just before each run (this VM's bandwidth "
        "drifts between rounds, so a step and a median bandwidth from other minutes can "
        "disagree): bandwidth bound / step = " + "; ".join(
            f"{fw} {100 * max(v):.0f} % at the best round, {100 * statistics.median(v):.0f} % "
            "median" for fw, v in paired.items() if v) + ".",
        (f"- bf16 faster than f32: " + ("**met**" if xf16["min"] < xf["min"] and
                                        xf16["median"] < xf["median"] else "**not met**")
         + f": {fmt(xf16['min'])} / {fmt(xf16['median'])} ms (min / median) against "
         f"{fmt(xf['min'])} / {fmt(xf['median'])} ms, "
         f"{xf['median'] / xf16['median']:.2f}× (median); bandwidth bound {bound['bf16']:.1f} "
         f"ms, {xf16['min'] / bound['bf16']:.1f}× off it."),
        "- resident ≤ checkpoint + 20 %: " + "; ".join(
            f"{name} with the {ck} checkpoint {'**met**' if rss <= TARGET_MEM * ckpt else '**not met**'}"
            f" ({rss / ckpt:.2f}×)" for name, ck, rss, ckpt in memory) + ".",
        f"- PyTorch bf16 against PyTorch fp32: {fmt(pt16['min'])} / {fmt(pt16['median'])} ms "
        f"(min / median) against {fmt(pt32['min'])} / {fmt(pt32['median'])} ms: bf16 "
        + ("slower" if pt16["min"] > pt32["min"] else "faster") + " by the min, "
        + ("slower" if pt16["median"] > pt32["median"] else "faster") + " by the median.",
    ]
    top = torch_ops[:8]
    lines += ["", "PyTorch fp32 per op (`torch.profiler` of one generation after the rounds, "
              "decode steps only: a prefill-only generation's profile subtracted; self CPU ms "
              "per step, calls per step): " + "; ".join(
                  f"{o[0]} {o[2]:.1f} ms ({o[1]:.0f} calls)" for o in top)
              + f"; all ops {sum(o[2] for o in torch_ops):.1f} ms. Small ops that run "
              "OpenMP-parallel on 2 threads (the cache's `cat`, `tanh` of GELU, "
              "attention) take milliseconds each, far more than their work: most likely each waits "
              "for a thread preempted by the other work on the shared cores (xf and ONNX "
              "Runtime have fewer parallel regions per token). Not checked on a quiet machine; "
              "read PyTorch's numbers as what it does under this load."]
    for name, (rows, total, steps, run_ms) in profiles.items():
        lines += ["", f"{name} per kernel, decode steps only (`--profile --trace-out` of one "
                  f"generation; trace events after the prefill, {steps} steps; ms per step; "
                  f"GB/s = weight bytes the GEMM reads / its time). Kernels sum to "
                  f"{total:.1f} ms per step; that run's decode took {run_ms:.1f} ms/token:", "",
                  "| kernel | what | calls / step | ms / step | weight GB/s | % |",
                  "|---|---|---|---|---|---|"]
        for kname, role, calls, ms, gbs in rows:
            lines.append(f"| {kname} | {role} | {calls:.0f} | {ms:.2f} | "
                         f"{'–' if gbs is None else f'{gbs:.1f}'} | {100 * ms / total:.1f}% |")
    png = ROOT / "docs" / "bench-decode.png"
    meta = dict(context=args.context, new=n, threads=th, cpu=cpu, bw_text=bw_text,
                load_text=load_text)
    has_plot = False if args.no_docs else plot(results, bound, meta, png)
    lines += ["", "![GPT-2 small decode, ms/token](bench-decode.png)" if has_plot or args.no_docs
              else "(matplotlib missing: no plot)", END]
    section = "\n".join(lines)
    print()
    print(section)
    log(f"\ntotal {time.time() - t_start:.0f} s")
    if args.no_docs:
        return 0
    doc = replace_doc_section(BEGIN, END, section)
    log(f"updated {doc.relative_to(ROOT)}" + (f" and {png.relative_to(ROOT)}" if has_plot else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
