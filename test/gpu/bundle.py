#!/usr/bin/env python3
"""Build a bundle for a GPU machine that has no LLVM/MLIR/Halide (docs/gpu.md, "On a GPU
machine without the toolchain"): everything is compiled and every reference computed here,
the GPU machine only replays (test/gpu/replay.sh), and test/gpu/compare_bundle.py reads
what came back.

The bundle (a directory; --tar also packs it, which must stay under 64 MiB):
  bin/       CUDA executables (xfc --target CAP), the server library libxfrt_serve.so (--serve
             loads it; replay.sh names it) and the stand-in driver for --dry-run
  w/         small random checkpoints (oracle --write-random); full-size runs use
             --random-weights 1, made the same on both machines
  ref/       float64 oracle outputs (small models), CPU-build outputs (full size, greedy ids)
  runs.tsv   phase, label, seconds, command — what replay.sh runs, in order
  phases.tsv phase, budget in seconds
  cases.json what compare_bundle.py checks
  batch*.txt the batch phase's prompts (--batch-file)
  tune/      xf-gpu-timing and manifest.json (xfc tune --target CAP --export: GPT-2's GEMMs and
             attention)
  replay.sh, torch_reference.py, serve_clients.py (copied from test/gpu)

Phases: checks (every example at the e2e sizes vs the oracle, and llama-hf with heads of 128;
greedy ids vs the CPU build),
full (GPT-2 small, SmolLM2-shaped Llama, MiniLM at full size vs the CPU build), tensor (the
tensor-core GEMMs and prefill attention, --gpu-matmul=tf32|bf16: GPT-2 and Llama at e2e sizes
(heads of 64, Llama's grouped: both on the tensor-core attention at 7 rows and more) vs the oracle within
check_examples.py's TENSOR_CORE_TOLERANCE, GPT-2 small vs the CPU build within the same, its
prefill timed and profiled; needs --cap cuda-sm_80 or newer), perf (prefill
and decode timings, --profile: per-kernel device times and launches per step), batch (GPT-2 small:
8 sequences decoding together, ids vs the CPU build's; decode tokens/s for 1 and 8 sequences;
--serve with 16 concurrent clients, their ids vs the CPU build's server and the aggregate
tokens/s: docs/gpu.md "Batches on the GPU"), tune (GPT-2 small's GEMMs' and attention's candidate GPU schedules
timed by tune/xf-gpu-timing, the program of `xfc tune --target cuda --export`, into
out/gpu-times.json for `xfc tune --import`: docs/tuning.md "CUDA GEMMs"), ncu (per-kernel GPU
time, grids; the MLIR kernels' speed-of-light throughputs and occupancy), torch (cuBLAS GEMMs, SDPA, the same models in PyTorch eager / compile).

usage: bundle.py --xfc build/bin/xfc --out DIR [--cap cuda-sm_86] [--quick] [--tar]
  --quick: tiny and gpt2 at e2e sizes and a 2-layer GPT-2 small only (ctest gpu-harness)
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ORACLE = os.path.join(ROOT, "test", "reference", "oracle.py")
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
from check_examples import DECODERS, MODELS, TENSOR_CORE_TOLERANCE  # noqa: E402

MAX_BUNDLE_BYTES = 64 << 20
# Seconds per phase: 540 in all, so that one replay fits a 10-minute command on the GPU machine.
PHASES = [("checks", 70), ("full", 60), ("tensor", 80), ("perf", 90), ("batch", 60),
          ("tune", 30), ("ncu", 80), ("torch", 70)]
# The tune phase: GPT-2's GEMMs' and attention's GPU schedules (xfc tune --target cuda --export;
# docs/tuning.md "CUDA GEMMs") at the lengths the perf phase times, this many candidates a kernel.
TUNE_LENGTHS, TUNE_CANDIDATES, QUICK_TUNE_CANDIDATES = "1,128,1024", 16, 3
# Full-size shapes (random weights): GPT-2 small, a SmolLM2-135M-shaped Llama, MiniLM-L6.
FULL = {
    "gpt2": ("gpt2", [], 50257),
    "gpt2-bf16": ("gpt2", ["--weight-type", "bf16"], 50257),
    "llama": ("llama", ["-D", "ℓ_max=2048"], 49152),
    "minilm": ("minilm", [], 30522),
}
QUICK_FULL = {"gpt2": ("gpt2", ["-D", "L=2"], 50257)}
# Other shapes of the checks phase: heads of 128 (Llama-3-8B's), whose fp32 FMA attention keeps
# its tiles in dynamic shared memory (docs/gpu.md, "Attention, fp32: the FMA kernel").
SHAPES = [("llama-hf", "llama-hf-head128", "L=2,H=4,H_kv=2,d_e=512,d_mlp=160,N_V=300,l_max=160")]


def ids(n, vocab, a=389, b=7):
    """Deterministic token ids (the same on both machines, no RNG)."""
    return ",".join(str((i * a + b) % vocab) for i in range(n))


class Bundle:
    def __init__(self, xfc, out, cap, python):
        self.xfc, self.out, self.cap, self.python = xfc, out, cap, python
        self.runs, self.cases = [], []
        self.cpu = os.path.join(out, ".cpu")  # CPU builds for references; not shipped
        for d in ("bin", "w", "ref", ".cpu"):
            os.makedirs(os.path.join(out, d), exist_ok=True)

    def sh(self, cmd):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"failed: {shlex.join(cmd)}\n{r.stderr[-3000:]}")
        return r

    def build(self, example, exe, target, flags=()):
        self.sh([self.xfc, os.path.join(ROOT, "examples", example + ".xf"), *flags,
                 f"--target={target}", "-o", exe])

    def run(self, phase, label, seconds, args):
        self.runs.append((phase, label, seconds, shlex.join(args)))

    def oracle(self, arch, hparams, *args):
        return self.sh([self.python, ORACLE, "--arch", arch, "--hparams", hparams, *args])

    # -- phase checks: every example vs the float64 oracle, greedy ids vs the CPU build --
    def small_examples(self, names, shapes=()):
        """`names` at their e2e sizes (check_examples.MODELS), then `shapes`: (example, tag,
        hparams) at other sizes under tag."""
        for name, base, shape in [(n, n, None) for n in names] + list(shapes):
            arch, hp, output, lengths = MODELS[name]
            hp = shape or hp
            defines = [a for kv in hp.split(",") for a in ("-D", kv)]
            vocab = int(dict(kv.split("=") for kv in hp.split(","))["N_V"])
            weights = f"w/{base}.safetensors"
            self.oracle(arch, hp, "--write-random", os.path.join(self.out, weights), "--seed", "11")
            for bf16 in ([False, True] if name in ("gpt2", "bert", "transformer") else [False]):
                tag = base + ("-bf16" if bf16 else "")
                flags = ["--weight-type", "bf16" if bf16 else "f32"]
                self.build(name, os.path.join(self.out, "bin", tag), self.cap, defines + flags)
                w = weights
                if bf16:  # the oracle reads what the executable holds: saved by a CPU build
                    cpu = os.path.join(self.cpu, tag)
                    self.build(name, cpu, "host", defines + flags)
                    w = f"w/{tag}.safetensors"
                    self.sh([cpu, "--weights", os.path.join(self.out, weights), "--save-weights",
                             os.path.join(self.out, w)])
                rng = np.random.default_rng(5)
                flag = "--logits-out" if output == "logits" else "--hidden-out"
                for n in lengths:
                    toks = ",".join(map(str, rng.integers(0, vocab, size=n)))
                    src = ",".join(map(str, rng.integers(0, vocab, size=n + 3)))
                    source = ["--source-tokens", src] if arch == "transformer" else []
                    for steps in [False, True] if name in DECODERS and not bf16 else [False]:
                        label = f"{tag}_{n}" + ("_steps" if steps else "")
                        self.run("checks", label, 30,
                                 [f"bin/{tag}", "--weights", w, "--tokens", toks, *source,
                                  *(["--decode-steps"] if steps else []), flag,
                                  f"out/{label}.npy"])
                        # The CUDA build keeps a float32 KV cache: the plain oracle.
                        self.oracle(arch, hp, "--weights", os.path.join(self.out, w), "--tokens",
                                    toks, *source, flag,
                                    os.path.join(self.out, "ref", label + ".npy"))
                        self.cases.append({"label": label, "kind": "oracle", "tol": 1e-4})
            if base in ("gpt2", "gopher", "llama"):
                cpu = os.path.join(self.cpu, name)
                self.build(name, cpu, "host", defines)
                rng = np.random.default_rng(5)
                for n in (1, 6, 17):
                    toks = ",".join(map(str, rng.integers(0, vocab, size=n)))
                    args = ["--weights", weights, "--tokens", toks, "--max-new-tokens", "20",
                            "--temperature", "0", "--eos", "none"]
                    label = f"generate_{name}_{n}"
                    self.run("checks", label, 30, [f"bin/{name}", *args])
                    got = self.sh([cpu, *[a.replace("w/", self.out + "/w/") for a in args]])
                    with open(os.path.join(self.out, "ref", label + ".stdout"), "w") as f:
                        f.write(got.stdout)
                    self.cases.append({"label": label, "kind": "ids"})

    # -- phases full, perf, ncu: full-size models --
    def full_size(self, full):
        for tag, (example, flags, vocab) in full.items():
            exe = f"bin/full-{tag}"
            self.build(example, os.path.join(self.out, exe), self.cap, flags)
            if "bf16" not in tag:  # CPU references on the same --random-weights
                cpu = os.path.join(self.cpu, "full-" + tag)
                self.build(example, cpu, "host", flags)
                output = "--hidden-out" if example == "minilm" else "--logits-out"
                label = f"full-{tag}_40"
                self.sh([cpu, "--random-weights", "1", "--tokens", ids(40, vocab), output,
                         os.path.join(self.out, "ref", label + ".npy")])
                self.run("full", label, 60, [exe, "--random-weights", "1", "--tokens",
                                             ids(40, vocab), output, f"out/{label}.npy"])
                self.cases.append({"label": label, "kind": "cpu", "tol": 1e-4})
            if example == "minilm":
                self.run("perf", f"time-{tag}-prefill128", 60,
                         [exe, "--random-weights", "1", "--tokens", ids(128, vocab), "--repeat", "20"])
                continue
            generate = ["--max-new-tokens", "64", "--temperature", "0", "--eos", "none"]
            if "bf16" not in tag:
                label = f"full-{tag}_generate"
                cpu = os.path.join(self.cpu, "full-" + tag)
                got = self.sh([cpu, "--random-weights", "1", "--tokens", ids(16, vocab),
                               "--max-new-tokens", "16", "--temperature", "0", "--eos", "none"])
                with open(os.path.join(self.out, "ref", label + ".stdout"), "w") as f:
                    f.write(got.stdout)
                self.run("full", label, 60, [exe, "--random-weights", "1", "--tokens",
                                             ids(16, vocab), "--max-new-tokens", "16",
                                             "--temperature", "0", "--eos", "none"])
                self.cases.append({"label": label, "kind": "ids"})
            # a forward of a length seen before is one CUDA graph launch (runs 3 on; -v says
            # why where it is not), and the same launched kernel by kernel
            for n, repeat in ((128, 20), (1024, 10)):
                self.run("perf", f"time-{tag}-prefill{n}", 60,
                         [exe, "--random-weights", "1", "--tokens", ids(n, vocab), "--repeat",
                          str(repeat), "-v"])
            self.run("perf", f"time-{tag}-prefill128-nographs", 60,
                     [exe, "--random-weights", "1", "--tokens", ids(128, vocab), "--repeat", "20",
                      "--cuda-graphs", "off"])
            # the fp32 FMA kernels of the prefill attention and the GEMMs (docs/gpu.md)
            # against Halide's pipelines beside them, the attention's 64-query blocks against
            # the launcher's choice (16 at 128 tokens, 32 at 1024), and at 1024 the GEMMs'
            # tiles as the launcher picks them (the unembedding's 128 × 128) against every GEMM
            # on 64 × 64 and on 128 × 128 tiles
            if tag == "gpt2":
                for what, switch, lengths in (
                        ("halide-attention", "XF_MLIR_ATTENTION=off", (128, 1024)),
                        ("halide-gemm", "XF_MLIR_GEMM=off", (128, 1024)),
                        ("attention64", "XF_ATTENTION_BLOCK_QUERIES=64", (128, 1024)),
                        ("tiles64", "XF_GEMM_TILE_ROWS=64", (1024,)),
                        ("tiles128", "XF_GEMM_TILE_ROWS=128", (1024,))):
                    for n in lengths:
                        self.run("perf", f"time-{tag}-prefill{n}-{what}", 60,
                                 ["env", switch, exe, "--random-weights", "1",
                                  "--tokens", ids(n, vocab), "--repeat", "10"])
            # decode steps replayed as CUDA graphs (the default; -v says why where they are
            # not), and launched kernel by kernel
            self.run("perf", f"time-{tag}-decode", 60,
                     [exe, "--random-weights", "1", "--tokens", ids(128, vocab), *generate, "-v"])
            self.run("perf", f"time-{tag}-decode-nographs", 60,
                     [exe, "--random-weights", "1", "--tokens", ids(128, vocab), *generate,
                      "--cuda-graphs", "off"])
            # --profile: device times by CUDA events, launches per forward / decode step (graphs
            # off, so that every step's kernels are timed)
            self.run("perf", f"profile-{tag}-prefill128", 60,
                     [exe, "--random-weights", "1", "--tokens", ids(128, vocab), "--profile"])
            self.run("perf", f"profile-{tag}-decode", 60,
                     [exe, "--random-weights", "1", "--tokens", ids(128, vocab), "--profile",
                      "--max-new-tokens", "16", "--temperature", "0", "--eos", "none",
                      "--cuda-graphs", "off"])
            if "bf16" in tag:
                continue
            # ncu, first: what bounds the MLIR kernels (the FMA GEMMs and attention at 1024
            # tokens): speed-of-light throughputs (SM, L1, L2, DRAM) and achieved occupancy
            if tag == "gpt2":
                self.run("ncu", f"ncu-{tag}-sol-prefill1024", 30,
                         ["NCU", "--csv", "--section", "SpeedOfLight", "--section", "Occupancy",
                          "--kernel-name", "regex:_(fma|tc)", "--launch-count", "16", exe,
                          "--random-weights", "1", "--tokens", ids(1024, vocab)])
            # ncu: every kernel's GPU time and grid (prefill 128 and 1024, 4 decode steps)
            for label, extra in ((f"ncu-{tag}-prefill128", ["--tokens", ids(128, vocab)]),
                                 (f"ncu-{tag}-prefill1024", ["--tokens", ids(1024, vocab)]),
                                 (f"ncu-{tag}-decode", ["--tokens", ids(128, vocab),
                                                        "--max-new-tokens", "5", "--temperature",
                                                        "0", "--eos", "none"])):
                # at most 500 kernels a run, so that ncu's replay of each fits the phase
                self.run("ncu", label, 120, ["NCU", "--csv", "--launch-count", "500", "--metrics",
                                             "gpu__time_duration.sum,launch__grid_size,"
                                             "launch__block_size,launch__registers_per_thread,"
                                             "dram__bytes_read.sum", exe, "--random-weights", "1",
                                             *extra])

    # -- phase batch: sequences decoding together, --serve (docs/gpu.md "Batches on the GPU") --
    def batches(self, full, serve_library):
        example, flags, vocab = full["gpt2"]
        exe, cpu = "bin/full-gpt2", os.path.join(self.cpu, "full-gpt2")  # built by full_size
        prompts = [ids(16, vocab, a=389 + 2 * k, b=7 + k) for k in range(8)]
        for name, lines in (("batch1.txt", prompts[:1]), ("batch8.txt", prompts)):
            with open(os.path.join(self.out, name), "w") as f:
                f.write("\n".join(lines) + "\n")
        greedy = ["--temperature", "0", "--eos", "none"]
        # 8 sequences decoding together: greedy ids equal to the CPU build's doing the same
        args = ["--random-weights", "1", "--batch-file", "batch8.txt", "--batch", "8",
                "--max-new-tokens", "16", *greedy]
        got = self.sh([cpu, *[a.replace("batch8.txt", os.path.join(self.out, "batch8.txt"))
                              for a in args]])
        with open(os.path.join(self.out, "ref", "batch-gpt2-ids.stdout"), "w") as f:
            f.write(got.stdout)
        self.run("batch", "batch-gpt2-ids", 30, [exe, *args])
        self.cases.append({"label": "batch-gpt2-ids", "kind": "jsonids"})
        # decode tokens/s for 1 and 8 sequences (the target: 8 ≥ 6× one's)
        for b in (1, 8):
            self.run("batch", f"time-gpt2-batch{b}", 30,
                     [exe, "--random-weights", "1", "--batch-file", f"batch{b}.txt", "--batch",
                      str(b), "--max-new-tokens", "128", *greedy])
        # --serve, 16 concurrent clients (2 requests of 64 tokens each): ids equal to the CPU
        # build's server for the same requests, and the aggregate tokens/s (target ≥ 3,000)
        shutil.copy(serve_library, os.path.join(self.out, "bin", "libxfrt_serve.so"))
        shutil.copy(os.path.join(HERE, "serve_clients.py"), self.out)
        clients = ["--clients", "16", "--requests", "2", "--max-tokens", "64", "--prompt-tokens",
                   "16", "--vocab", str(vocab)]
        self.sh([self.python, os.path.join(HERE, "serve_clients.py"), "--out",
                 os.path.join(self.out, "ref", "serve-gpt2-16.json"), *clients, "--", cpu,
                 "--random-weights", "1", "--batch", "16"])
        self.run("batch", "serve-gpt2-16", 50,
                 ["python3", "serve_clients.py", "--out", "out/serve-gpt2-16.json", *clients,
                  "--timeout", "45", "--", exe, "--random-weights", "1", "--batch", "16"])
        self.cases.append({"label": "serve-gpt2-16", "kind": "serve"})

    # -- phase tensor, first: the sm_90a wgmma GEMMs (docs/gpu.md, "Warpgroup GEMM (sm_90a)"),
    # never run on a GPU before: GPT-2 small with bf16 weights and bf16 products against the CPU
    # build on the same weights, every qualifying GEMM on wgmma (XF_WGMMA=always) and every one
    # on mma.sync (off); the prefill at 1024 timed with the launcher's choice and without --
    def wgmma(self, full):
        cap = self.cap.rsplit("sm_", 1)[-1]
        if not cap.isdigit() or int(cap) < 80:
            return
        example, flags, vocab = full["gpt2"]
        flags = flags + ["--weight-type", "bf16"]
        exe = "bin/full-gpt2-bf16-tc-bf16"
        self.build(example, os.path.join(self.out, exe), self.cap, flags + ["--gpu-matmul=bf16"])
        cpu = os.path.join(self.cpu, "full-gpt2-bf16")
        self.build(example, cpu, "host", flags)
        self.sh([cpu, "--random-weights", "1", "--tokens", ids(40, vocab), "--logits-out",
                 os.path.join(self.out, "ref", "full-gpt2-bf16_40.npy")])
        for mode in ("always", "off"):
            label = f"full-gpt2-bf16-tc-bf16-wgmma-{mode}_40"
            self.run("tensor", label, 30, ["env", f"XF_WGMMA={mode}", exe, "--random-weights",
                                           "1", "--tokens", ids(40, vocab), "--logits-out",
                                           f"out/{label}.npy"])
            shutil.copy(os.path.join(self.out, "ref", "full-gpt2-bf16_40.npy"),
                        os.path.join(self.out, "ref", label + ".npy"))
            self.cases.append({"label": label, "kind": "cpu",
                               "tol": TENSOR_CORE_TOLERANCE["bf16"]})
        for mode, suffix in (("on", ""), ("off", "-nowgmma")):
            self.run("tensor", f"time-gpt2-bf16w-tc-bf16-prefill1024{suffix}", 30,
                     ["env", f"XF_WGMMA={mode}", exe, "--random-weights", "1", "--tokens",
                      ids(1024, vocab), "--repeat", "5"])
        # ncu, early in its phase (after the FMA kernels' speed of light; its later runs are
        # longer): the wgmma kernels' speed of light and occupancy at 1024 tokens
        at = next((i + 1 for i, run in enumerate(self.runs)
                   if run[0] == "ncu" and "-sol-" in run[1]), len(self.runs))
        self.run("ncu", "ncu-gpt2-bf16w-wgmma-sol-prefill1024", 30,
                 ["NCU", "--csv", "--section", "SpeedOfLight", "--section", "Occupancy",
                  "--kernel-name", "regex:_wg", "--launch-count", "6", exe, "--random-weights",
                  "1", "--tokens", ids(1024, vocab)])
        self.runs.insert(at, self.runs.pop())

    # -- phase tensor: the tensor-core GEMMs and prefill attention (xfc --gpu-matmul, docs/gpu.md
    # "Tensor cores", "Tensor-core attention"); --profile's lines time xf_attention_* alone --
    def tensor_cores(self, names, full):
        cap = self.cap.rsplit("sm_", 1)[-1]
        if not cap.isdigit() or int(cap) < 80:
            print(f"no tensor phase: --cap {self.cap} is below sm_80")
            return
        for name in names:  # prefill against the oracle (decode steps keep Halide's fp32 GEMV)
            arch, hp, output, lengths = MODELS[name]
            defines = [a for kv in hp.split(",") for a in ("-D", kv)]
            vocab = int(dict(kv.split("=") for kv in hp.split(","))["N_V"])
            flag = "--logits-out" if output == "logits" else "--hidden-out"
            for precision, tol in TENSOR_CORE_TOLERANCE.items():
                tag = f"{name}-tc-{precision}"  # gpt2-bf16 is the bf16-weight build's
                self.build(name, os.path.join(self.out, "bin", tag), self.cap,
                           defines + [f"--gpu-matmul={precision}"])
                rng = np.random.default_rng(5)  # the ids small_examples drew: its references
                for n in lengths:
                    toks = ",".join(map(str, rng.integers(0, vocab, size=n)))
                    rng.integers(0, vocab, size=n + 3)
                    label = f"{tag}_{n}"
                    self.run("tensor", label, 30, [f"bin/{tag}", "--weights",
                                                   f"w/{name}.safetensors", "--tokens", toks, flag,
                                                   f"out/{label}.npy"])
                    shutil.copy(os.path.join(self.out, "ref", f"{name}_{n}.npy"),
                                os.path.join(self.out, "ref", label + ".npy"))
                    self.cases.append({"label": label, "kind": "oracle", "tol": tol})
        for tag in ("gpt2",):  # full size: against the CPU build, timed, profiled
            example, flags, vocab = full[tag]
            for precision, tol in TENSOR_CORE_TOLERANCE.items():
                exe = f"bin/full-{tag}-tc-{precision}"
                self.build(example, os.path.join(self.out, exe), self.cap,
                           flags + [f"--gpu-matmul={precision}"])
                label = f"full-{tag}-tc-{precision}_40"
                self.run("tensor", label, 30, [exe, "--random-weights", "1", "--tokens",
                                               ids(40, vocab), "--logits-out", f"out/{label}.npy"])
                shutil.copy(os.path.join(self.out, "ref", f"full-{tag}_40.npy"),
                            os.path.join(self.out, "ref", label + ".npy"))
                self.cases.append({"label": label, "kind": "cpu", "tol": tol})
                for n, repeat in ((128, 10), (1024, 5)):
                    self.run("tensor", f"time-{tag}-tc-{precision}-prefill{n}", 30,
                             [exe, "--random-weights", "1", "--tokens", ids(n, vocab), "--repeat",
                              str(repeat)])
                # Split-K (docs/gpu.md, "Split-K"; the N = 768 projections split 3 ways at
                # ℓ = 128 on 132 SMs): the same prefill with it off.
                self.run("tensor", f"time-{tag}-tc-{precision}-prefill128-nosplit", 30,
                         ["env", "XF_TENSOR_CORE_SPLIT_K=1", exe, "--random-weights", "1",
                          "--tokens", ids(128, vocab), "--repeat", "10"])
                # The wide tiles (docs/gpu.md, "Wide tiles": the unembedding's 128 × 128
                # tiles at ℓ = 1024) against 64 × 64 ones for every GEMM, and 128 × 128 for
                # every GEMM (the N = 768 ones then under a block an SM).
                for rows in (64, 128):
                    self.run("tensor", f"time-{tag}-tc-{precision}-prefill1024-tiles{rows}", 30,
                             ["env", f"XF_GEMM_TILE_ROWS={rows}", exe, "--random-weights", "1",
                              "--tokens", ids(1024, vocab), "--repeat", "5"])
                # ncu on the tensor-core kernels at 1024 tokens (bf16): whether the wide tiles
                # (`_tc128`) and the 64-row ones are L2-bound (L2 % against SM %); first in its
                # phase after the FMA kernels' (the phase's later runs are longer)
                if precision == "bf16":
                    at = next((i + 1 for i, run in enumerate(self.runs)
                               if run[0] == "ncu" and "-sol-" in run[1]), len(self.runs))
                    self.run("ncu", f"ncu-{tag}-tc-bf16-sol-prefill1024", 30,
                             ["NCU", "--csv", "--section", "SpeedOfLight", "--section",
                              "Occupancy", "--kernel-name", "regex:_tc", "--launch-count", "12",
                              exe, "--random-weights", "1", "--tokens", ids(1024, vocab)])
                    self.runs.insert(at, self.runs.pop())
                self.run("tensor", f"profile-{tag}-tc-{precision}-prefill1024", 30,
                         [exe, "--random-weights", "1", "--tokens", ids(1024, vocab), "--profile"])

    # -- phase tune: the GEMMs' and attention's GPU schedules timed (docs/tuning.md, "CUDA GEMMs") --
    def gpu_tuning(self, full, candidates):
        example, flags, _ = full["gpt2"]
        self.sh([self.xfc, "tune", os.path.join(ROOT, "examples", example + ".xf"), *flags,
                 f"--target={self.cap}", "--export", os.path.join(self.out, "tune"),
                 "--lengths", TUNE_LENGTHS, "--candidates", str(candidates)])
        budget = dict(PHASES)["tune"]
        self.run("tune", "tune-gpt2", budget, ["tune/xf-gpu-timing", "--budget", str(budget - 5),
                                               "--out", "out/gpu-times.json"])

    def finish(self, tar):
        shutil.copy(os.path.join(HERE, "replay.sh"), self.out)
        shutil.copy(os.path.join(HERE, "torch_reference.py"), self.out)
        self.run("torch", "torch-kernels", 60, ["python3", "torch_reference.py", "kernels"])
        self.run("torch", "torch-models", 90, ["python3", "torch_reference.py", "models"])
        self.run("torch", "torch-compile", 90, ["python3", "torch_reference.py", "compile"])
        # replay.sh budgets each phase as one stretch: the runs phase by phase, in order
        order = [phase for phase, _ in PHASES]
        self.runs.sort(key=lambda run: order.index(run[0]))
        with open(os.path.join(self.out, "runs.tsv"), "w") as f:
            for run in self.runs:
                f.write("\t".join(map(str, run)) + "\n")
        with open(os.path.join(self.out, "phases.tsv"), "w") as f:
            for phase, budget in PHASES:
                f.write(f"{phase}\t{budget}\n")
        with open(os.path.join(self.out, "cases.json"), "w") as f:
            json.dump(self.cases, f, indent=1)
        shutil.rmtree(self.cpu)
        print(f"{len(self.runs)} runs, {len(self.cases)} checked outputs in {self.out}")
        if tar:
            path = self.out.rstrip("/") + ".tar.gz"
            with tarfile.open(path, "w:gz") as t:
                for entry in sorted(os.listdir(self.out)):
                    if entry != "ref":  # references stay here for compare_bundle.py
                        t.add(os.path.join(self.out, entry), arcname=entry)
            size = os.path.getsize(path)
            print(f"{path}: {size / 2**20:.1f} MiB (limit {MAX_BUNDLE_BYTES >> 20} MiB)")
            if size > MAX_BUNDLE_BYTES:
                raise SystemExit("the bundle is over the limit")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cap", default="cuda-sm_86", help="--target of the CUDA builds")
    ap.add_argument("--stand-in", help="the stand-in driver library (replay.sh --dry-run)")
    ap.add_argument("--python", default=sys.executable, help="runs the oracle")
    ap.add_argument("--serve-library", help="libxfrt_serve.so of the xfc's build (default: "
                    "lib/libxfrt_serve.so beside its bin/)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tar", action="store_true")
    args = ap.parse_args()
    b = Bundle(os.path.abspath(args.xfc), os.path.abspath(args.out), args.cap, args.python)
    if args.stand_in:
        shutil.copy(args.stand_in, os.path.join(b.out, "bin", "libcuda-stand-in.so"))
    b.small_examples(["tiny", "gpt2"] if args.quick else list(MODELS), () if args.quick else SHAPES)
    b.full_size(QUICK_FULL if args.quick else FULL)
    b.batches(QUICK_FULL if args.quick else FULL, args.serve_library or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(args.xfc))), "lib", "libxfrt_serve.so"))
    b.wgmma(QUICK_FULL if args.quick else FULL)
    b.tensor_cores(["gpt2"] if args.quick else ["gpt2", "llama"], QUICK_FULL if args.quick else FULL)
    b.gpu_tuning(QUICK_FULL if args.quick else FULL,
                 QUICK_TUNE_CANDIDATES if args.quick else TUNE_CANDIDATES)
    b.finish(args.tar)
    return 0


if __name__ == "__main__":
    sys.exit(main())
