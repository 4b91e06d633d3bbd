#!/opt/xf-venv/bin/python
"""xf's CUDA build beside PyTorch on the same NVIDIA GPU (issue 13's benchmarks; docs/gpu.md).

Usage: test/bench/run_gpu.py [--build DIR] [--hf-python /opt/hf-venv/bin/python]
                             [--capability 86] [--workdir DIR] [--out results.json]

Needs a GPU, and torch with CUDA in --hf-python. All in one run, same machine:
1. Kernels: `xf-bench-gpu` (test/bench/BenchGpu.cpp, configured here with -DXF_GPU_BENCH=ON)
   JIT-compiles the same CUDA pipelines xfc builds and times them on device-resident buffers.
   - GEMMs of GPT-2 small (M = 1, 128, 1024: QKV 768→2304, attention output 768→768, MLP
     768→3072 and 3072→768, the tied unembedding 768→50257 with W [N, K]) and 4096³, against
     torch.matmul in float32 with TF32 off (cuBLAS), as a ratio xf / cuBLAS throughput.
   - Causal attention, 12 heads of 64, ℓ = 128 and 1024, and decode (1 query over 1024 keys),
     against torch SDPA in float32 (its default backend for fp32) and, for reference, SDPA's
     FlashAttention-2 backend in float16 (FA2 has no fp32 path).
2. GPT-2 small: `xfc examples/gpt2.xf --target cuda-sm_NN` on one random checkpoint
   (test/reference/oracle.py --write-random) beside transformers' GPT2LMHeadModel (eager and
   torch.compile) on the GPU with the same weights; the logits of ℓ = 128 must agree within
   1e-4 (max|Δ|/max|ref|) or the run stops. Prefill ℓ = 128 and 1024 (--repeat; min and
   median ms), decode ms/token at context 128 (64 new tokens, greedy, KV cache on both sides).
Prints a table and writes --out as JSON. Targets (issue 13): GEMMs ≥ 0.9× cuBLAS, attention
≥ 0.8× FlashAttention-2, decode ≥ 2× eager and ≥ 1× torch.compile, prefill ≥ 1× eager.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
ORACLE = ROOT / "test" / "reference" / "oracle.py"
GEMMS = [(m, k, n, layout) for m in (1, 128, 1024)
         for (k, n, layout) in ((768, 2304, "kn"), (768, 768, "kn"), (768, 3072, "kn"),
                                (3072, 768, "kn"), (768, 50257, "nk"))] + [(4096, 4096, 4096, "kn")]
ATTENTION = [(128, 128, "causal"), (1024, 1024, "causal"), (1, 1024, "causal")]
XF_TIMES = re.compile(r"min ([0-9.]+) ms median ([0-9.]+) ms")
XF_DECODE = re.compile(r"decode (\d+) tokens in ([0-9.]+) ms \(([0-9.]+) ms/token")

TORCH = r'''
import json, sys, time, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
req = json.loads(sys.argv[1])
dev = "cuda"

def timed(fn, rounds=5, runs=20):
    fn(); torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(runs):
            fn()
        b.record(); torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / runs)
    out.sort()
    return {"best_ms": out[0], "median_ms": out[len(out) // 2]}

res = {}
if req["kind"] == "gemm":
    m, k, n, layout = req["shape"]
    x = torch.randn(m, k, device=dev)
    w = torch.randn(n, k, device=dev) if layout == "nk" else torch.randn(k, n, device=dev)
    f = (lambda: x @ w.t()) if layout == "nk" else (lambda: x @ w)
    res = timed(f)
elif req["kind"] == "attention":
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel, SDPBackend
    m, mz, causal = req["shape"]
    h, d = 12, 64
    for name, dtype, backends in (("sdpa_fp32", torch.float32, None),
                                  ("flash2_fp16", torch.float16, [SDPBackend.FLASH_ATTENTION])):
        q = torch.randn(1, h, m, d, device=dev, dtype=dtype)
        k = torch.randn(1, h, mz, d, device=dev, dtype=dtype)
        v = torch.randn(1, h, mz, d, device=dev, dtype=dtype)
        # The causal rule with M < Mz is xf's (query t sees keys <= t + Mz - M): a bottom-right mask.
        mask = None
        if causal == "causal" and m != mz:
            mask = torch.ones(m, mz, device=dev, dtype=torch.bool).tril(mz - m)
        call = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                      is_causal=causal == "causal" and mask is None)
        try:
            if backends:
                with sdpa_kernel(backends):
                    res[name] = timed(call)
            else:
                res[name] = timed(call)
        except RuntimeError as e:
            res[name] = {"error": str(e).splitlines()[0]}
elif req["kind"] == "gpt2":
    sys.path.insert(0, req["bench_dir"])
    from hf_common import build_torch
    import numpy as np
    model = build_torch(req["weights"], 1).to(dev)
    tokens = torch.tensor([req["tokens"]], device=dev)
    with torch.inference_mode():
        np.save(req["logits"], model(tokens).logits[0].float().cpu().numpy())
        for mode in ("eager", "compile"):
            m = model if mode == "eager" else torch.compile(model)
            for l in req["lengths"]:
                ids = torch.randint(0, 50257, (1, l), device=dev)
                res[f"{mode}_prefill_{l}"] = timed(lambda: m(ids).logits, rounds=3, runs=5)
            # Greedy decode with the KV cache, 64 steps after a 128-token prompt.
            ids = torch.randint(0, 50257, (1, 128), device=dev)
            def decode():
                out = m(ids, use_cache=True)
                past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
                for _ in range(64):
                    out = m(nxt, past_key_values=past, use_cache=True)
                    past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
                return nxt
            t = timed(decode, rounds=3, runs=1)
            prefill = res[f"{mode}_prefill_128"]["best_ms"]
            res[f"{mode}_decode_ms_per_token"] = (t["best_ms"] - prefill) / 64
print(json.dumps(res))
'''


def torch_run(hf_python, request):
    r = subprocess.run([hf_python, "-c", TORCH, json.dumps(request)], capture_output=True,
                       text=True)
    if r.returncode:
        raise SystemExit(f"torch failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def xf_kernel(bench, args):
    r = subprocess.run([str(bench), *map(str, args)], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"xf-bench-gpu {' '.join(map(str, args))} failed: {r.stderr}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--hf-python", default="/opt/hf-venv/bin/python")
    ap.add_argument("--capability", type=int, default=86)
    ap.add_argument("--workdir")
    ap.add_argument("--out")
    args = ap.parse_args()
    build = pathlib.Path(args.build)
    subprocess.run(["cmake", "-DXF_GPU_BENCH=ON", str(build)], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", str(build), "xf-bench-gpu", "xfc"], check=True)
    bench, xfc = build / "bin" / "xf-bench-gpu", build / "bin" / "xfc"
    results = {"gemm": [], "attention": [], "gpt2": {}}

    print("| GEMM M×K×N (W) | xf ms | cuBLAS fp32 ms | xf / cuBLAS |")
    print("|---|---|---|---|")
    for m, k, n, layout in GEMMS:
        xf = xf_kernel(bench, ["gemm", m, k, n, layout, 5, 20, args.capability])
        ref = torch_run(args.hf_python, {"kind": "gemm", "shape": [m, k, n, layout]})
        ratio = ref["best_ms"] / xf["best_ms"]
        results["gemm"].append({"shape": [m, k, n, layout], "xf": xf, "cublas": ref,
                                "ratio": ratio})
        print(f"| {m}×{k}×{n} ({layout}) | {xf['best_ms']:.4f} | {ref['best_ms']:.4f} | "
              f"{ratio:.2f}× |")

    print("\n| attention M×Mz, 12×64 | xf fp32 ms | SDPA fp32 ms | FA2 fp16 ms | xf / SDPA | "
          "xf / FA2 |")
    print("|---|---|---|---|---|---|")
    for m, mz, mask in ATTENTION:
        xf = xf_kernel(bench, ["attention", m, mz, 12, 64, mask, 5, 20, args.capability])
        ref = torch_run(args.hf_python, {"kind": "attention", "shape": [m, mz, mask]})
        sdpa, fa2 = ref["sdpa_fp32"].get("best_ms"), ref["flash2_fp16"].get("best_ms")
        results["attention"].append({"shape": [m, mz, mask], "xf": xf, "torch": ref})
        fmt = lambda v: f"{v:.4f}" if v else "n/a"  # noqa: E731
        print(f"| {m}×{mz} | {xf['best_ms']:.4f} | {fmt(sdpa)} | {fmt(fa2)} | "
              f"{(sdpa / xf['best_ms']) if sdpa else 0:.2f}× | "
              f"{(fa2 / xf['best_ms']) if fa2 else 0:.2f}× |")

    with tempfile.TemporaryDirectory(prefix="xf-gpu-bench-") as tmp:
        work = pathlib.Path(args.workdir or tmp)
        exe, weights = work / "gpt2-cuda", work / "gpt2.safetensors"
        subprocess.run([str(xfc), str(ROOT / "examples" / "gpt2.xf"), "--tuning-db", "none",
                        f"--target=cuda-sm_{args.capability}", "-o", str(exe)], check=True)
        subprocess.run([sys.executable, str(ORACLE), "--arch", "gpt2", "--hparams",
                        "L=12,H=12,d_e=768,d_mlp=3072,N_V=50257,l_max=1024", "--write-random",
                        str(weights), "--seed", "3"], check=True)
        tokens = [int(t) for t in range(7, 7 + 128 * 389, 389)]
        tokens = [t % 50257 for t in tokens]
        xf_logits, ref_logits = work / "xf.npy", work / "torch.npy"
        subprocess.run([str(exe), "--weights", str(weights), "--tokens",
                        ",".join(map(str, tokens)), "--logits-out", str(xf_logits)], check=True)
        ref = torch_run(args.hf_python, {"kind": "gpt2", "bench_dir": str(ROOT / "test" / "bench"),
                                         "weights": str(weights), "tokens": tokens,
                                         "logits": str(ref_logits), "lengths": [128, 1024]})
        import numpy as np
        a, b = np.load(xf_logits).astype(np.float64), np.load(ref_logits).astype(np.float64)
        error = np.abs(a - b).max() / np.abs(b).max()
        print(f"\nGPT-2 small logits, xf CUDA vs PyTorch: max rel err {error:.2e}")
        if error > 1e-4:
            raise SystemExit("not the same model: logits differ beyond 1e-4")
        xf_times = {}
        for length in (128, 1024):
            ids = ",".join(str((i * 389 + 7) % 50257) for i in range(length))
            r = subprocess.run([str(exe), "--weights", str(weights), "--tokens", ids,
                                "--repeat", "10"], capture_output=True, text=True, check=True)
            found = XF_TIMES.search(r.stderr)
            xf_times[f"prefill_{length}"] = float(found.group(1)) if found else None
        r = subprocess.run([str(exe), "--weights", str(weights), "--tokens",
                            ",".join(map(str, tokens)), "--max-new-tokens", "64", "--eos",
                            "none", "--temperature", "0"], capture_output=True, text=True,
                           check=True)
        found = XF_DECODE.search(r.stderr)
        xf_times["decode_ms_per_token"] = float(found.group(3)) if found else None
        results["gpt2"] = {"xf": xf_times, "torch": ref, "logits_error": error}
        print("| GPT-2 small | xf CUDA | PyTorch eager | torch.compile | vs eager | vs compile |")
        print("|---|---|---|---|---|---|")
        for key in ("prefill_128", "prefill_1024", "decode_ms_per_token"):
            eager = ref[f"eager_{key}"]
            comp = ref[f"compile_{key}"]
            eager = eager["best_ms"] if isinstance(eager, dict) else eager
            comp = comp["best_ms"] if isinstance(comp, dict) else comp
            mine = xf_times[key]
            print(f"| {key} ms | {mine} | {eager:.3f} | {comp:.3f} | "
                  f"{eager / mine if mine else 0:.2f}× | {comp / mine if mine else 0:.2f}× |")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
