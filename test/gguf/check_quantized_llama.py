#!/usr/bin/env python3
"""Weights kept in ggml blocks (xfc --quantized-like) on a small random Llama.

  1. the oracle writes a random float32 llama checkpoint (L=2, GQA 4/2, d_e=64, d_mlp=96);
  2. its matrices are quantized here in numpy (gguf_format.py's layouts) to a mix of block
     types — token embedding (tied unembedding) Q8_0, attention Q4_0, MLP Q4_1, norms F32 —
     and written as a GGUF file; their dequantized values (gguf_format.dequantize, ggml's
     definitions) go to a float32 safetensors file for the oracle;
  3. examples/llama.xf built with --quantized-like that file reads the blocks themselves;
     its logits for prompts of 1, 7 and 130 tokens (GEMV path, GEMM path with row tails)
     match the float64 oracle on the dequantized weights within 1e-4 (max|Δ|/max|ref|), and
     the same spec built without the option (dequantized at load);
  4. greedy generation with the KV cache (decode GEMVs) gives the oracle's ids;
  5. the build with --q8-gemm-inputs as well (GEMMs on 8-bit activations): at ℓ = 1 (the
     decode GEMV), and at ℓ = 7 and 130 where the multi-row GEMM takes 8-bit inputs too
     (xfrt_block_gemm: a host build on a CPU with AVX-512 VNNI), within 1e-4 of the oracle that
     rounds the same GEMM inputs to Q8_0 (--q8-gemm-inputs-from 0) and within Q8_BOUND of the
     exact oracle (the stated cost of 8-bit activations, docs/correctness.md); elsewhere ℓ = 7
     and 130 run the exact Halide GEMM, bitwise equal to the blocks build; its greedy ids with
     the KV cache = the oracle's with the rounded rows (from 0, or from the prompt's length);
     where xfrt_block_gemm runs, its AMX int8 tile path as well (XF_AMX=emulate: tiles
     emulated in C++ where the CPU has none), within 1e-4 of the same oracle;
  6. `xfc tune --quantized-like` times the block GEMMs as block kernels, and the build with
     its database matches the oracle (host target only);
  7. bad inputs give one error line: a GGUF whose tensor has another block type, a
     safetensors file or random weights for a blocks executable, xfc --quantized-like with a
     missing file or with --weight-type=bf16, xfc --q8-gemm-inputs without --quantized-like.

usage: check_quantized_llama.py --xfc build/bin/xfc [--workdir DIR] [--target T]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import gguf_format as gf  # noqa: E402
import safetensors_io  # noqa: E402

ORACLE = os.path.join(ROOT, "test", "reference", "oracle.py")
HP = dict(L=2, H=4, H_kv=2, d_e=64, d_mlp=96, N_V=256, l_max=256)
HPARAMS = ",".join(f"{k}={v}" for k, v in HP.items())
TOLERANCE = 1e-4
# 8-bit activations against the exact model, max|Δ|/max|ref| of the logits at ℓ = 1: each
# rounded input is off by ≤ d/2 = max|block|/254 per element (measured here 5.3e-3: the errors
# of ~9 roundings per layer average out; 1e-2 leaves room for another seed, not for a wrong
# scale or offset, which give errors of order 1).
Q8_BOUND = 1e-2
# With every row of a prompt rounded (xfrt_block_gemm) a row's keys and values of the rows
# before it carry the rounding too, where at ℓ = 1 (and in decode steps) the context is exact:
# the median row measured 1.2e-2 (ℓ = 7 and 130), the worst of 130 rows 2.5e-2. The bounds
# leave 1.6-2x room for another seed; a wrong scale or offset still errs by order 1 (and the
# 1e-4 check against the oracle rounding the same rows holds the kernel to 2.3e-7).
Q8_ALL_ROWS_MEDIAN_BOUND = 2e-2
Q8_ALL_ROWS_WORST_BOUND = 5e-2


def q8_prefill(target):
    """Whether a --q8-gemm-inputs build's multi-row GEMMs round their inputs too: xfrt_block_gemm
    runs where the CPU has AVX-512 VNNI (BW, VL) and the target allows it (a host build)."""
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    return not target and {"avx512_vnni", "avx512bw", "avx512vl", "avx2", "fma", "f16c"} <= set(flags)


def q8_amx_emulated(path, tokens, length, ref_q8, failures):
    """The q8 build's multi-row GEMMs on AMX int8 tiles (xfrt_block_gemm's tdpbusd path),
    emulated in C++ where the CPU has no AMX (XF_AMX=emulate; the real tiles where it has):
    exact 32-bit sums as VNNI's, so within TOLERANCE of the oracle rounding the same rows.
    Returns that check; the emulation's stderr line is required where AMX is absent."""
    with open("/proc/cpuinfo") as f:
        amx = any(line.startswith("flags") and "amx_int8" in line.split() for line in f)
    out = path(f"q8_amx{length}.npy")
    r = run([path("q8"), "--weights", path("model.gguf"), "--tokens", tokens, "--logits-out",
             out], env=dict(os.environ, XF_AMX="emulate"))
    if not amx and "XF_AMX=emulate: AMX tile operations emulated" not in r.stderr:
        failures.append(f"ℓ={length}: XF_AMX=emulate: the q8 build's GEMMs did not take the "
                        f"emulated AMX tiles: {r.stderr[-500:]}")
    got = np.load(out)
    return (float(np.max(np.abs(got - ref_q8)) / np.max(np.abs(ref_q8))), TOLERANCE,
            "oracle with Q8 GEMM inputs, AMX int8 tiles" + ("" if amx else " emulated"))


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed ({r.returncode}): "
                           f"{r.stderr.strip()[-2000:]}")
    return r


def f16_bytes(a):
    return np.asarray(a, np.float32).astype("<f2").view(np.uint8).reshape(len(a), 2)


def quantize(w, gtype):
    """Rows of blocks of 32, as llama.cpp's reference quantizers lay them out."""
    blocks = w.astype(np.float32).reshape(-1, 32)
    if gtype == gf.Q8_0:
        d = np.abs(blocks).max(1) / 127
        q = np.round(blocks / np.where(d == 0, 1, d)[:, None]).astype(np.int8)
        out = np.concatenate([f16_bytes(d), q.view(np.uint8)], axis=1)
    elif gtype == gf.Q4_0:
        idx = np.abs(blocks).argmax(1)
        d = blocks[np.arange(len(blocks)), idx] / -8
        q = np.clip(np.round(blocks / np.where(d == 0, 1, d)[:, None]) + 8, 0, 15)
        q = q.astype(np.uint8)
        out = np.concatenate([f16_bytes(d), q[:, :16] | (q[:, 16:] << 4)], axis=1)
    else:  # Q4_1
        lo, hi = blocks.min(1), blocks.max(1)
        d = (hi - lo) / 15
        q = np.clip(np.round((blocks - lo[:, None]) / np.where(d == 0, 1, d)[:, None]), 0, 15)
        q = q.astype(np.uint8)
        out = np.concatenate([f16_bytes(d), f16_bytes(lo), q[:, :16] | (q[:, 16:] << 4)], axis=1)
    return out.tobytes()


def block_type(name):
    if name == "token_embd.weight":
        return gf.Q8_0
    if ".attn_" in name and name.endswith("weight") and "norm" not in name:
        return gf.Q4_0
    if ".ffn_" in name and "norm" not in name:
        return gf.Q4_1
    return gf.F32


def write_model(weights, gguf_path, dequantized_path, types):
    tensors, dequantized = [], {}
    for name in sorted(weights):
        w = np.asarray(weights[name], np.float32)
        gtype = types(name)
        raw = w.tobytes() if gtype == gf.F32 else quantize(w, gtype)
        ne = list(reversed(w.shape))
        tensors.append((name, gtype, ne, raw))
        dequantized[name] = gf.dequantize(gtype, raw, ne).astype(np.float32)
    gf.write_gguf(gguf_path, [], tensors)
    if dequantized_path:
        safetensors_io.save(dequantized_path, dequantized)


def check_q8_profile(path, prompt):
    """--profile reads the q8 build's block GEMMs against the int8 dot-product peak (the
    manifest's "products": "int8"), or the AMX int8 tiles' where the process may use them
    ("amx": true), measured beside the fp32 one and kept in the machine cache; with only
    --peak's fp32 numbers they have no bound."""
    failures = []
    machine = path("machine.json")
    env = dict(os.environ, XF_MACHINE_FILE=machine)
    r = run([path("q8"), "--weights", path("model.gguf"), "--tokens", prompt, "--profile",
             "--threads", "1"], env=env)
    entries = list(json.load(open(machine)).values())
    if len(entries) != 1 or any(k not in entries[0] for k in (
            "int8_gops", "bf16_gflops", "amx_int8_gops", "amx_bf16_gflops")):
        failures.append(f"--profile of the q8 build kept no product peaks: {entries}")
    amx = entries and entries[0].get("amx_int8_gops", 0) > 0
    peak_key = "amx_int8_gops" if amx else "int8_gops"
    peak_name = "AMX int8 tiles' peak (rows past the GEMV)" if amx else "int8 dot-product peak"
    vnni = entries and entries[0].get(peak_key, 0) > 0
    line = f"roofline: {peak_name} " + ("" if vnni else "absent on this CPU")
    if line not in r.stderr + r.stdout:
        failures.append(f"--profile of the q8 build: no '{line}' line:\n{r.stdout}{r.stderr}")
    # The cached entry is read back with its product peaks: no second measurement.
    entries[0][peak_key] = 12345.0
    json.dump({k: entries[0] for k in json.load(open(machine))}, open(machine, "w"))
    r = run([path("q8"), "--weights", path("model.gguf"), "--tokens", prompt, "--profile",
             "--threads", "1"], env=env)
    if f"{peak_name} 12345.0 GOP/s for its kernels" not in r.stderr + r.stdout:
        failures.append("--profile of the q8 build did not read the kept int8 peak")
    r = run([path("q8"), "--weights", path("model.gguf"), "--tokens", prompt, "--profile",
             "--peak", "100,10"], env=env)
    out = r.stderr + r.stdout
    gemm_rows = [l for l in out.splitlines() if l.startswith("xf_gemm_")]
    if f"{peak_name} not measured: those kernels have no bound" not in out or \
            not gemm_rows or any(not l.rstrip().endswith("-") for l in gemm_rows):
        failures.append(f"--profile --peak of the q8 build: its GEMMs should have no bound:\n{out}")
    print(f"q8 build's --profile: block GEMMs read against the {peak_name}" +
          ("" if vnni else " (absent on this CPU: no bound)"))
    return failures


def check_tuned_blocks(xfc, spec, defines, path, rng):
    """`xfc tune --quantized-like`: the block GEMMs are timed as block kernels (their
    entries are keyed by block type and every trial ran on blocks without a wrong result),
    and the build with that database still matches the oracle."""
    failures = []
    db = path("tuned.db")
    dtypes = ("q8_0", "q4_0", "q4_1")
    # The budget is a bound (docs/tuning.md): a run may end before the last kernel — or before
    # its first batch, whose kernels compile from nothing, is done: then it writes nothing — and
    # the next run starts with the kernels the database has no entry for; runs until every
    # block type has an entry. 20 s runs, as check_tuner.py's: a 5 s budget (+ its 10 s slack)
    # cut every first batch while another build loaded the machine.
    entries = []
    for _ in range(8):
        run([xfc, "tune", spec, *defines, "--quantized-like", path("model.gguf"), "--budget",
             "20s", "--lengths", "1,7", "--db", db])
        if os.path.exists(db):
            with open(db) as f:
                entries = json.load(f)["entries"]
        if all(any(f":{d}" in e["kernel"] for e in entries) for d in dtypes):
            break
    if not os.path.exists(db):
        return [f"xfc tune: no database written in 8 runs of 20 s ({db})"]
    for dtype in dtypes:
        tuned = [e for e in entries if f":{dtype}" in e["kernel"]]
        if not tuned:
            failures.append(f"xfc tune: no {dtype} GEMM in the database")
        for e in tuned:
            wrong = [t for t in e["trials"] if t.get("failure")]
            if not e.get("schedule") or wrong:
                failures.append(f"xfc tune: {e['kernel']}: schedule {e.get('schedule')!r}, "
                                f"failed trials {wrong[:2]}")
    run([xfc, spec, *defines, "--quantized-like", path("model.gguf"), "--tuning-db", db,
         "-o", path("blocks-tuned")])
    tokens = ",".join(map(str, rng.integers(0, HP["N_V"], 7)))
    ref = path("ref-tuned.npy")
    run([sys.executable, ORACLE, "--arch", "llama", "--hparams", HPARAMS, "--weights",
         path("dequantized.safetensors"), "--tokens", tokens, "--logits-out", ref])
    run([path("blocks-tuned"), "--weights", path("model.gguf"), "--tokens", tokens,
         "--logits-out", path("tuned7.npy")])
    ref = np.load(ref)
    err = float(np.max(np.abs(np.load(path("tuned7.npy")) - ref)) / np.max(np.abs(ref)))
    print(f"ℓ=  7 xf blocks tuned vs oracle: max|Δ|/max|ref| = {err:.2e}")
    if not err <= TOLERANCE:
        failures.append(f"tuned blocks build vs oracle: {err:.3e}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--target", help="Halide target for the kernels (default: host)")
    ap.add_argument("--workdir")
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="xf-quantized-") as tmp:
        work = args.workdir or tmp
        path = lambda name: os.path.join(work, name)  # noqa: E731
        run([sys.executable, ORACLE, "--arch", "llama", "--hparams", HPARAMS, "--seed", "3",
             "--write-random", path("random.safetensors")])
        weights = safetensors_io.load(path("random.safetensors"), as_float64=False)
        write_model(weights, path("model.gguf"), path("dequantized.safetensors"), block_type)
        defines = [x for k, v in HP.items() for x in ("-D", f"{k}={v}")]
        spec = os.path.join(ROOT, "examples", "llama.xf")
        target = ["--target", args.target] if args.target else []
        run([args.xfc, spec, *defines, *target, "--quantized-like", path("model.gguf"),
             "-o", path("blocks")])
        run([args.xfc, spec, *defines, *target, "--quantized-like", path("model.gguf"),
             "--q8-gemm-inputs", "-o", path("q8")])
        run([args.xfc, spec, *defines, *target, "-o", path("f32")])
        manifest = run([args.xfc, spec, *defines, "--quantized-like", path("model.gguf"),
                        "--emit=host"]).stdout
        for dtype in ("q8_0", "q4_0", "q4_1"):
            if f'\\22dtype\\22: \\22{dtype}\\22' not in manifest and \
                    f'"dtype": "{dtype}"' not in manifest:
                failures.append(f"--emit=host: no parameter with dtype {dtype} in the manifest")

        rounded_prefill = q8_prefill(args.target)
        print("q8 build's multi-row GEMMs: " + ("8-bit inputs (xfrt_block_gemm, AVX-512 VNNI)"
                                              if rounded_prefill else "the exact Halide kernel"))
        rng = np.random.default_rng(5)
        for length in (1, 7, 130):
            tokens = ",".join(map(str, rng.integers(0, HP["N_V"], length)))
            ref = path(f"ref{length}.npy")
            run([sys.executable, ORACLE, "--arch", "llama", "--hparams", HPARAMS, "--weights",
                 path("dequantized.safetensors"), "--tokens", tokens, "--logits-out", ref])
            ref = np.load(ref)
            got = {}
            for exe in ("blocks", "f32", "q8"):
                out = path(f"{exe}{length}.npy")
                run([path(exe), "--weights", path("model.gguf"), "--tokens", tokens,
                     "--logits-out", out])
                got[exe] = np.load(out)
            for exe, other in (("blocks", ref), ("f32", ref), ("blocks", got["f32"])):
                err = float(np.max(np.abs(got[exe] - other)) / np.max(np.abs(ref)))
                against = "oracle" if other is ref else "xf dequantized at load"
                ok = err <= TOLERANCE
                print(f"ℓ={length:3d} xf {exe:6s} vs {against}: max|Δ|/max|ref| = {err:.2e} "
                      f"({'ok' if ok else 'FAIL'})")
                if not ok:
                    failures.append(f"ℓ={length} {exe} vs {against}: {err:.3e}")
            # The decode path (gemv_rows_below = 4), and the GEMMs where xfrt_block_gemm runs.
            if length < 4 or rounded_prefill:
                ref_q8 = path(f"ref_q8_{length}.npy")
                run([sys.executable, ORACLE, "--arch", "llama", "--hparams", HPARAMS,
                     "--weights", path("dequantized.safetensors"), "--tokens", tokens,
                     "--q8-gemm-inputs-from", "0", "--logits-out", ref_q8])
                ref_q8 = np.load(ref_q8)
                # Per row: max|Δ| of its logits / max|ref|; the whole check takes the worst.
                rows = np.max(np.abs(got["q8"] - ref).reshape(length, -1), axis=1) / np.max(np.abs(ref))
                checks = [(float(np.max(np.abs(got["q8"] - ref_q8)) / np.max(np.abs(ref_q8))),
                           TOLERANCE, "oracle with Q8 GEMM inputs"),
                          (float(np.median(rows)),
                           Q8_BOUND if length < 4 else Q8_ALL_ROWS_MEDIAN_BOUND,
                           "exact oracle (median row)"),
                          (float(np.max(rows)), Q8_BOUND if length < 4 else Q8_ALL_ROWS_WORST_BOUND,
                           "exact oracle (worst row)")]
                if length >= 4:
                    checks.append(q8_amx_emulated(path, tokens, length, ref_q8, failures))
                for err, bound, what in checks:
                    ok = err <= bound
                    print(f"ℓ={length:3d} xf q8     vs {what}: max|Δ|/max|ref| = {err:.2e} "
                          f"(bound {bound:g}, {'ok' if ok else 'FAIL'})")
                    if not ok:
                        failures.append(f"ℓ={length} q8 vs {what}: {err:.3e}")
            elif not np.array_equal(got["q8"], got["blocks"]):
                failures.append(f"ℓ={length}: the q8 build's GEMM path differs from blocks'")
            else:
                print(f"ℓ={length:3d} xf q8     = xf blocks (bitwise; the exact GEMM path)")

        # Decode GEMVs through the KV cache: the oracle's greedy ids (Alg. 14).
        prompt = ",".join(map(str, rng.integers(0, HP["N_V"], 9)))
        r = run([path("blocks"), "--weights", path("model.gguf"), "--tokens", prompt,
                 "--max-new-tokens", "12", "--temperature", "0", "--eos", "none"])
        got_ids = [int(t) for t in r.stdout.strip().split(",")]
        r = run([sys.executable, ORACLE, "--arch", "llama", "--hparams", HPARAMS, "--weights",
                 path("dequantized.safetensors"), "--tokens", prompt, "--generate",
                 "--max-new-tokens", "12"])
        want_ids = [int(t) for t in r.stdout.strip().splitlines()[-1].split(",")]
        print(f"greedy ids: xf blocks {got_ids}, oracle {want_ids}")
        if got_ids != want_ids:
            failures.append(f"greedy ids differ: {got_ids} vs {want_ids}")
        r = run([path("q8"), "--weights", path("model.gguf"), "--tokens", prompt,
                 "--max-new-tokens", "12", "--temperature", "0", "--eos", "none"])
        got_ids = [int(t) for t in r.stdout.strip().split(",")]
        r = run([sys.executable, ORACLE, "--arch", "llama", "--hparams", HPARAMS, "--weights",
                 path("dequantized.safetensors"), "--tokens", prompt, "--generate",
                 "--max-new-tokens", "12", "--q8-gemm-inputs-from",
                 "0" if rounded_prefill else "9"])
        want_ids = [int(t) for t in r.stdout.strip().splitlines()[-1].split(",")]
        print(f"greedy ids: xf q8 {got_ids}, oracle with Q8 decode rows {want_ids}")
        if got_ids != want_ids:
            failures.append(f"q8 greedy ids differ: {got_ids} vs {want_ids}")

        if not args.target:
            failures += check_q8_profile(path, prompt)
            failures += check_tuned_blocks(args.xfc, spec, defines, path, rng)

        # Bad inputs.
        write_model(weights, path("other.gguf"), None,
                    lambda n: gf.Q8_0 if block_type(n) == gf.Q4_1 else block_type(n))
        cases = [
            ([path("blocks"), "--weights", path("other.gguf"), "--tokens", "1"],
             "tensor 'blk.0.ffn_gate.weight': type Q8_0 in the file, but the executable reads "
             "Q4_1 blocks"),
            ([path("blocks"), "--weights", path("dequantized.safetensors"), "--tokens", "1"],
             "': the executable reads it as Q8_0 blocks (built with xfc --quantized-like), "
             "which only a .gguf file holds"),
            ([path("blocks"), "--random-weights", "1", "--tokens", "1"],
             "random weights are float32 only"),
            ([args.xfc, spec, "--quantized-like", path("missing.gguf"), "-o", path("x")],
             "xfc: error: " + path("missing.gguf")),
            ([args.xfc, spec, "--quantized-like", path("model.gguf"), "--weight-type=bf16",
              "-o", path("x")],
             "xfc: error: --quantized-like and --weight-type=bf16 are exclusive"),
            ([args.xfc, spec, "--q8-gemm-inputs", "-o", path("x")],
             "xfc: error: --q8-gemm-inputs needs --quantized-like"),
        ]
        for cmd, want in cases:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            lines = r.stderr.strip().splitlines()
            ok = r.returncode != 0 and len(lines) == 1 and want in lines[0]
            print(f"refused {'ok' if ok else 'FAIL'}: {r.stderr.strip()[:160]}")
            if not ok:
                failures.append(f"{cmd[1:3]}: rc={r.returncode} stderr={r.stderr.strip()!r}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
