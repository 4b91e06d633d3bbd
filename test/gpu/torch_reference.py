#!/usr/bin/env python3
"""PyTorch on the same GPU as xf's replayed bundle (test/gpu/replay.sh): the anchors the GPU
issues compare against. One JSON object per line on stdout, so a run cut short still reports.

usage: torch_reference.py kernels|models|compile
  kernels  cuBLAS through torch.matmul (fp32 with TF32 off, TF32, bf16) at GPT-2 small's GEMM
           shapes (M = 1, 128, 1024) and 4096³; SDPA fp32 and FlashAttention-2 fp16, 12 heads
           of 64, causal ℓ = 128 and 1024, and one query over 1024 keys
  models   GPT-2 small and a SmolLM2-135M-shaped Llama (random weights), eager fp32: prefill
           ℓ = 128 and 1024, decode ms/token at context 128 (a loop over the KV cache, and
           transformers' generate with a static cache); GPT-2 in bf16
  compile  GPT-2 small under torch.compile (default mode), the same measurements
Times are CUDA events around `runs` calls, the best of `rounds`.
"""
import json
import sys
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
DEV = "cuda"


def emit(name, value):
    print(json.dumps({name: value}), flush=True)


def timed(fn, rounds=5, runs=10):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(runs):
            fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / runs)
    times.sort()
    return {"best_ms": round(times[0], 4), "median_ms": round(times[len(times) // 2], 4)}


def guarded(name, fn):
    try:
        emit(name, fn())
    except Exception as e:  # a failing section reports and the others still run
        emit(name, {"error": repr(e)[:300]})


def gemms():
    shapes = [(m, k, n, layout) for m in (1, 128, 1024)
              for (k, n, layout) in ((768, 2304, "kn"), (768, 768, "kn"), (768, 3072, "kn"),
                                     (3072, 768, "kn"), (768, 50257, "nk"))]
    shapes.append((4096, 4096, 4096, "kn"))
    result = {}
    for m, k, n, layout in shapes:
        x = torch.randn(m, k, device=DEV)
        w = torch.randn(n, k, device=DEV) if layout == "nk" else torch.randn(k, n, device=DEV)
        row = {}
        for precision in ("fp32", "tf32", "bf16"):
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
            xs, ws = (x.bfloat16(), w.bfloat16()) if precision == "bf16" else (x, w)
            row[precision] = timed((lambda: xs @ ws.t()) if layout == "nk" else (lambda: xs @ ws))
        torch.backends.cuda.matmul.allow_tf32 = False
        result[f"{m}x{k}x{n}{layout}"] = row
    return result


def attention():
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    result = {}
    for m, mz in ((128, 128), (1024, 1024), (1, 1024)):
        row = {}
        for name, dtype, backend in (("fp32", torch.float32, None),
                                     ("fa2_fp16", torch.float16, SDPBackend.FLASH_ATTENTION)):
            q = torch.randn(1, 12, m, 64, device=DEV, dtype=dtype)
            k = torch.randn(1, 12, mz, 64, device=DEV, dtype=dtype)
            v = torch.randn_like(k)
            call = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=(m == mz))
            try:
                if backend is None:
                    row[name] = timed(call)
                else:
                    with sdpa_kernel(backend):
                        row[name] = timed(call)
            except Exception as e:
                row[name] = {"error": str(e).splitlines()[0][:200]}
        result[f"{m}x{mz}"] = row
    return result


def models():
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config()).to(DEV).eval()
    llama = LlamaForCausalLM(LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
        tie_word_embeddings=True, rms_norm_eps=1e-5)).to(DEV).eval()
    return gpt2, llama


def prefill_and_decode(model, vocab):
    result = {}
    with torch.inference_mode():
        for n in (128, 1024):
            tokens = torch.randint(0, vocab, (1, n), device=DEV)
            result[f"prefill_{n}"] = timed(lambda: model(tokens).logits, rounds=3, runs=5)
        tokens = torch.randint(0, vocab, (1, 128), device=DEV)

        def decode():
            out = model(tokens, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
            for _ in range(64):
                out = model(nxt, past_key_values=past, use_cache=True)
                past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
            return nxt

        loop = timed(decode, rounds=3, runs=1)
        result["decode_loop_ms_per_token"] = round(
            (loop["best_ms"] - result["prefill_128"]["best_ms"]) / 64, 4)
    return result


def generate_static(model, vocab):
    tokens = torch.randint(0, vocab, (1, 128), device=DEV)

    def run(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        model.generate(tokens, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                       cache_implementation="static", pad_token_id=0)
        torch.cuda.synchronize()
        return time.perf_counter() - t

    with torch.inference_mode():
        run(2)
        one, many = min(run(1) for _ in range(3)), min(run(65) for _ in range(3))
    return {"decode_ms_per_token": round((many - one) / 64 * 1000, 4)}


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "kernels":
        guarded("gemm", gemms)
        guarded("attention", attention)
    elif what == "models":
        gpt2, llama = models()
        guarded("gpt2_eager_fp32", lambda: prefill_and_decode(gpt2, 50257))
        guarded("gpt2_generate_static_fp32", lambda: generate_static(gpt2, 50257))
        guarded("llama_eager_fp32", lambda: prefill_and_decode(llama, 49152))
        guarded("gpt2_eager_bf16", lambda: prefill_and_decode(gpt2.to(torch.bfloat16), 50257))
    elif what == "compile":
        gpt2, _ = models()
        start = time.time()
        guarded("gpt2_compile_fp32", lambda: prefill_and_decode(torch.compile(gpt2), 50257))
        emit("compile_seconds", round(time.time() - start, 1))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
