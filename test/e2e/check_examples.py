#!/usr/bin/env python3
"""Compile each example spec at small sizes and compare its executable with the oracle.

For every model: `xfc examples/M.xf -D ... -o exe`, a random checkpoint written by the
independent oracle (test/reference), then for several sequence lengths — 1, lengths that are
not multiples of any tile size, and the longest allowed — the executable's logits or hidden
states must satisfy max|Δ| / max|ref| ≤ 1e-4 against the oracle's float64 result (the bound and
why it is right are in docs/correctness.md). Decoders are checked again with --decode-steps
(each position's logits from the cached decode step that adds its token). Also checks that the executable rejects a
checkpoint missing a tensor, naming it.

With --weight-type bf16 the executables keep GEMM weights and embedding tables in bfloat16;
the oracle then reads the bfloat16-rounded checkpoint the executable saves (--save-weights), so
the same 1e-4 bound checks the kernels rather than the rounding. With --kv-cache-type f16 the
decode steps read a float16 KV cache (xfc's default) and the oracle rounds K and V to float16
as well (KV_FLOAT16_TOLERANCE says why its bound is wider); --kv-cache-type f32 holds the
float32 cache's decode steps to the plain oracle. With --weight-type
bf16-gemm-inputs the prefill GEMMs also round their inputs to bfloat16 (xfc
--bf16-gemm-inputs); that is a real change of numerics, checked against the bound
BF16_INPUTS_TOLERANCE explained in docs/correctness.md.

--amx-emulated runs the executables with XF_AMX=emulate: the AMX kernels (bf16-gemm-inputs:
xfrt_amx_bf16_gemm) on their tile operations written out in C++, so that the AMX path is checked
end to end against the oracle on a CPU without AMX; a prefill run must say it took that path.

--xfc-arg passes a flag to xfc (repeatable): `--xfc-arg=--target=x86-64-linux-avx2-fma...`
builds for an AVX2-only target (its default schedule) on any AVX2 machine, and
`--xfc-arg=--tuning-db=DB` checks the kernels a tuning database chose.

usage: check_examples.py --xfc build/bin/xfc [--model gpt2 ...] [--weight-type bf16] [--workdir DIR]
                         [--xfc-arg=FLAG ...]
"""

import argparse
import os
import sys
import tempfile

from oracle_runs import ORACLE, ROOT, compare_lengths, report, run

TOLERANCE = 1e-4
# bfloat16 keeps 8 significant bits: each rounded GEMM input is off by ≤ 2^-8 relative, and a
# 2-layer model's logits come out of ~6 such GEMMs in sequence (docs/correctness.md).
BF16_INPUTS_TOLERANCE = 1e-2
# A float16 KV cache (--kv-cache-type f16), its decode steps against the oracle rounding K and V
# to float16 too: where an element's float32 (xf) and float64 (oracle) values straddle a float16
# rounding boundary the two round one float16 step (2^-11 relative) apart — ~1e-3 of the cache's
# elements — which moved the logits by up to 1.3e-4 of their largest (llama, ℓ=130); not rounding
# the oracle's K and V (or xf not rounding them) leaves 5.4e-4 there.
KV_FLOAT16_TOLERANCE = 2.5e-4
# xfc --target cuda-sm_80 --gpu-matmul=tf32|bf16: the GEMMs of M >= 5 rows on tensor cores, x and
# W rounded to TF32 (10 significant bits) or bfloat16 (7), float32 sums. Expected bounds, not yet
# checked on a GPU (docs/correctness.md): bf16 as BF16_INPUTS_TOLERANCE, TF32's 8× finer.
TENSOR_CORE_TOLERANCE = {"tf32": 1e-3, "bf16": 1e-2}

# model → (oracle arch, small hyperparameters, output kind, sequence lengths)
MODELS = {
    # Heads of 64 (gpt2, llama, llama-hf): decode steps run libxfrt's xfrt_decode_attention
    # (heads of 64 or 128 only); tiny's and gopher's narrower heads keep the Halide kernel's.
    "gpt2": ("gpt2", "L=2,H=2,d_e=128,d_mlp=256,N_V=300,l_max=80", "logits", [1, 7, 33, 80]),
    "tiny": ("gpt2", "L=2,H=2,d_e=16,d_mlp=64,N_V=64,l_max=32", "logits", [1, 5, 32]),
    "bert": ("bert", "L=2,H=4,d_e=64,d_mlp=256,N_V=300,l_max=80", "hidden", [1, 9, 80]),
    "minilm": ("minilm", "L=2,H=4,d_e=48,d_mlp=96,N_V=200,l_max=40", "hidden", [1, 13, 40]),
    "bert-mlm": ("bert_mlm", "L=2,H=4,d_e=64,d_mlp=128,N_V=300,l_max=40", "logits", [1, 9, 40]),
    "compact": ("compact", "L=2,H=4,d_e=64,d_qk=16,d_vo=16,d_ff=128,N_V=256,l_max=64", "logits",
                [1, 6, 64]),
    "gopher": ("gopher", "L=2,H=4,d_e=64,d_mlp=256,N_V=256,l_max=64", "logits", [1, 11, 64]),
    "transformer": ("transformer", "L_enc=2,L_dec=2,H=4,d_e=64,d_mlp=128,N_V=256", "logits",
                    [1, 7, 30]),
    # Grouped-query attention (2 and 3 query heads per K/V head), both rotary pairings, and a
    # prompt longer than 128 tokens (rotations at positions past two attention key blocks).
    "llama": ("llama", "L=2,H=4,H_kv=2,d_e=256,d_mlp=128,N_V=256,l_max=160", "logits",
              [1, 7, 130]),
    "llama-hf": ("llama_hf", "L=2,H=6,H_kv=2,d_e=384,d_mlp=160,N_V=300,l_max=160", "logits",
                 [1, 9, 133]),
}

# Decoders with a KV cache: also checked with --decode-steps.
DECODERS = {"gpt2", "tiny", "gopher", "llama", "llama-hf"}  # compact: bidirectional, no cache


def check_model(name, xfc, workdir, python, weight_type="f32", xfc_args=(), kv_cache_type=None,
                gpu_matmul=None):
    arch, hparams, output, lengths = MODELS[name]
    exe = os.path.join(workdir, name)
    defines = [arg for kv in hparams.split(",") for arg in ("-D", kv)]
    # --bf16-products=on: the bf16 dot-product kernels are what is checked, on every CPU (auto
    # keeps float32 products where bf16 ones do not pay, as on an Intel Xeon without AMX).
    flags = (["--weight-type", "bf16", "--bf16-gemm-inputs", "--bf16-products=on"]
             if weight_type == "bf16-gemm-inputs"
             else ["--weight-type", weight_type])
    tolerance = BF16_INPUTS_TOLERANCE if weight_type == "bf16-gemm-inputs" else TOLERANCE
    if gpu_matmul:
        flags.append(f"--gpu-matmul={gpu_matmul}")
        tolerance = max(tolerance, TENSOR_CORE_TOLERANCE[gpu_matmul])
    kv = [f"--kv-cache-type={kv_cache_type}"] if kv_cache_type else []
    r = run([xfc, os.path.join(ROOT, "examples", name + ".xf"), *defines, *flags, *xfc_args, *kv,
             "-o", exe])
    if r.returncode != 0:
        return [f"{name}: xfc failed: {r.stderr.strip()}"]
    weights = os.path.join(workdir, name + ".safetensors")
    r = run([python, ORACLE, "--arch", arch, "--hparams", hparams, "--write-random", weights,
             "--seed", "11"])
    if r.returncode != 0:
        return [f"{name}: oracle --write-random failed: {r.stderr.strip()}"]
    if weight_type != "f32":
        # Both sides use the weights the executable actually holds.
        rounded = os.path.join(workdir, name + "_bf16.safetensors")
        r = run([exe, "--weights", weights, "--save-weights", rounded])
        if r.returncode != 0:
            return [f"{name}: --save-weights failed: {r.stderr.strip()}"]
        weights = rounded

    def executable(tokens, extra, flag, path):
        r = run([exe, "--weights", weights, "--tokens", tokens, *extra, flag, path])
        return f"executable failed: {r.stderr.strip()}" if r.returncode != 0 else None

    failures = compare_lengths(name, MODELS[name], weights, executable, python=python,
                               workdir=workdir, seed=5, tolerance=tolerance)
    if os.environ.get("XF_AMX") == "emulate":
        # The emulated tiles must have run (a kernel that declined would leave the Halide one).
        r = run([exe, "--weights", weights, "--tokens", ",".join(["1"] * 16)])
        if "XF_AMX=emulate: AMX tile operations emulated" not in r.stderr:
            failures.append(f"{name}: XF_AMX=emulate, but no AMX kernel ran on a 16-token "
                            f"prefill: rc={r.returncode} {r.stderr.strip()}")
    if name in DECODERS:
        # Every position's logits from the decode step that adds its token (xf_forward_cached,
        # the decode kernels), against the same oracle.
        def steps(tokens, extra, flag, path):
            return executable(tokens, [*extra, "--decode-steps"], flag, path)
        # A float16 cache (xfc's default): the oracle rounds K and V to float16 as it holds them.
        half = [] if kv_cache_type == "f32" else ["--kv-float16"]
        failures += compare_lengths(name + "+steps", MODELS[name], weights, steps, python=python,
                                    workdir=workdir, seed=5,
                                    tolerance=max(tolerance, KV_FLOAT16_TOLERANCE) if half
                                    else tolerance, oracle_args=half)
    # A checkpoint without one tensor is refused, naming it.
    missing = os.path.join(workdir, name + "_missing.safetensors")
    strip_first_tensor(weights, missing)
    r = run([exe, "--weights", missing, "--tokens", "1"])
    if r.returncode == 0 or "'" not in r.stderr:
        failures.append(f"{name}: a checkpoint missing a tensor was not rejected by name: "
                        f"rc={r.returncode} {r.stderr.strip()}")
    return failures


def strip_first_tensor(src, dst):
    """Copy a .safetensors file without its first (alphabetical) tensor."""
    import json
    import struct
    with open(src, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    names = sorted(k for k in header if k != "__metadata__")
    del header[names[0]]
    out_body, offset = b"", 0
    for k in names[1:]:
        begin, end = header[k]["data_offsets"]
        out_body += body[begin:end]
        header[k]["data_offsets"] = [offset, offset + end - begin]
        offset += end - begin
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + out_body)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--xfc", required=True)
    p.add_argument("--model", action="append", choices=sorted(MODELS))
    p.add_argument("--weight-type", choices=["f32", "bf16", "bf16-gemm-inputs"], default="f32")
    p.add_argument("--workdir")
    p.add_argument("--xfc-arg", action="append", default=[])
    p.add_argument("--kv-cache-type", choices=["f16", "f32"],
                   help="xfc --kv-cache-type (default xfc's, f16): with f16 the decode steps are "
                        "checked against the oracle with K and V rounded to float16")
    p.add_argument("--gpu-matmul", choices=sorted(TENSOR_CORE_TOLERANCE),
                   help="xfc --gpu-matmul (with --xfc-arg=--target=cuda-sm_80): tensor-core "
                        "GEMMs, checked within TENSOR_CORE_TOLERANCE")
    p.add_argument("--amx-emulated", action="store_true",
                   help="run the executables with XF_AMX=emulate (the AMX kernels' tile "
                        "operations in C++) and check that a prefill took that path")
    args = p.parse_args()
    if args.amx_emulated:
        os.environ["XF_AMX"] = "emulate"
    failures = []
    with tempfile.TemporaryDirectory(prefix="xf-e2e-") as tmp:
        workdir = args.workdir or tmp
        for name in args.model or sorted(MODELS):
            failures += check_model(name, args.xfc, workdir, sys.executable, args.weight_type,
                                    args.xfc_arg, args.kv_cache_type, args.gpu_matmul)
    sys.exit(report(failures))


if __name__ == "__main__":
    main()
