"""One framework's GPT-2-small greedy decoder with a KV cache, held in its own process for
run_decode.py. Run with /opt/hf-venv (torch, transformers, safetensors; onnx, onnxscript,
onnxruntime for --framework ort):

  /opt/hf-venv/bin/python test/bench/decode/decode_worker.py --framework torch|torch-bf16|ort \
      --weights W.safetensors --tokens 1,2,3 --threads 2 --workdir DIR

All build GPT2LMHeadModel from the checkpoint (test/bench/hf_common.py).
`torch`: fp32, torch.inference_mode, torch.set_num_threads(threads); a manual greedy loop:
  one prefill forward over the prompt (use_cache=True), then one forward per new token with
  input_ids [1, 1] and the previous step's past_key_values (transformers' DynamicCache).
`torch-bf16`: the same model cast to bfloat16 (weights and activations).
`ort`: two ONNX models exported with torch.onnx.export (opset 18, torch.export-based):
  `prefill` (input_ids [1, ℓ] -> last row's logits, present.{i}.key/value [1, H, ℓ, 64]) and
  `decoder with past` (input_ids [1, 1], past_key_values.{i}.key/value [1, H, T, 64] with T
  dynamic -> logits, present.{i}.key/value [1, H, T + 1, 64]), the layout of Hugging Face
  Optimum's GPT-2 export; both wrap the same GPT2LMHeadModel, the cache rebuilt as a
  DynamicCache inside the wrapper. InferenceSession with intra_op_num_threads=threads,
  inter_op_num_threads=1, sequential, ORT_ENABLE_ALL; presents are fed back as numpy arrays.
Ties of the greedy argmax go to the lowest id in all three (as xf's --temperature 0).

Protocol (hf_common.py): {"ready": true, "versions": {...}, "setup_s": s}, then per command:
  generate N -> prefill + N-1 decode steps (N new tokens);
                {"ids": [N ids], "prefill_ms": ms, "step_ms": [N-1 decode step times]}
  profile N  -> (torch, torch-bf16) one generation of N tokens under torch.profiler; the decode
                steps' ops by self CPU time: {"ops": [[op, calls per step, ms per step], ...]}
  quit
The timed span of a decode step is the forward with the cache and the argmax of its logits.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from hf_common import build_torch, reply  # noqa: E402  (first: moves fd 1 to stderr)

LAYERS = 12


def torch_decoder(model):
    import torch

    def generate(prompt, n):
        ids, steps = [], []
        with torch.inference_mode():
            t0 = time.perf_counter()
            out = model(input_ids=torch.tensor([prompt]), use_cache=True)
            past = out.past_key_values
            nxt = int(out.logits[0, -1].argmax())
            prefill = (time.perf_counter() - t0) * 1e3
            ids.append(nxt)
            for _ in range(n - 1):
                t0 = time.perf_counter()
                out = model(input_ids=torch.tensor([[nxt]]), past_key_values=past,
                            use_cache=True)
                past = out.past_key_values
                nxt = int(out.logits[0, -1].argmax())
                steps.append((time.perf_counter() - t0) * 1e3)
                ids.append(nxt)
        return ids, prefill, steps
    return generate


def torch_profile(generate, prompt, n):
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("generate"):
            generate(prompt, n)
    # the prefill is one forward over the prompt; count only ops of the n - 1 decode steps by
    # subtracting a prefill-only generation profiled the same way
    with profile(activities=[ProfilerActivity.CPU]) as pre:
        generate(prompt, 1)
    first = {e.key: (e.count, e.self_cpu_time_total) for e in pre.key_averages()}
    ops = []
    for e in prof.key_averages():
        c0, t0 = first.get(e.key, (0, 0.0))
        ms = (e.self_cpu_time_total - t0) / 1e3 / (n - 1)
        if ms > 0 and e.key not in ("generate",):
            ops.append([e.key, (e.count - c0) / (n - 1), ms])
    return sorted(ops, key=lambda o: -o[2])


def ort_decoder(model, prompt, threads, workdir):
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    from transformers import DynamicCache

    def presents(cache):
        out = []
        for i in range(LAYERS):
            out += [cache.layers[i].keys, cache.layers[i].values]
        return out

    class Prefill(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            out = self.m(input_ids=input_ids, use_cache=True)
            return (out.logits[:, -1, :], *presents(out.past_key_values))

    class WithPast(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, *past):
            cache = DynamicCache()
            for i in range(LAYERS):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.m(input_ids=input_ids, past_key_values=cache, use_cache=True)
            return (out.logits[:, -1, :], *presents(out.past_key_values))

    past_names = [f"past_key_values.{i}.{kv}" for i in range(LAYERS) for kv in ("key", "value")]
    present_names = [n.replace("past_key_values", "present") for n in past_names]
    ids = torch.tensor([prompt])
    prefill_path = os.path.join(workdir, "gpt2_prefill.onnx")
    step_path = os.path.join(workdir, "gpt2_with_past.onnx")
    with torch.no_grad():
        torch.onnx.export(Prefill(model).eval(), (ids,), prefill_path, input_names=["input_ids"],
                          output_names=["logits", *present_names], opset_version=18,
                          dynamo=True, external_data=True)
        out = model(input_ids=ids, use_cache=True)
        past = presents(out.past_key_values)
        nxt = out.logits[:, -1:].argmax(-1)
        T = torch.export.Dim("T", min=2, max=1023)
        torch.onnx.export(WithPast(model).eval(), (nxt, *past), step_path,
                          input_names=["input_ids", *past_names],
                          output_names=["logits", *present_names], opset_version=18,
                          dynamo=True, external_data=True,
                          dynamic_shapes=(None, tuple({2: T} for _ in past)))

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    first = ort.InferenceSession(prefill_path, so, providers=["CPUExecutionProvider"])
    step = ort.InferenceSession(step_path, so, providers=["CPUExecutionProvider"])

    def generate(prompt, n):
        ids, steps = [], []
        t0 = time.perf_counter()
        out = first.run(None, {"input_ids": np.array([prompt], dtype=np.int64)})
        nxt = int(out[0][0].argmax())
        prefill = (time.perf_counter() - t0) * 1e3
        ids.append(nxt)
        for _ in range(n - 1):
            t0 = time.perf_counter()
            feed = dict(zip(past_names, out[1:]))
            feed["input_ids"] = np.array([[nxt]], dtype=np.int64)
            out = step.run(None, feed)
            nxt = int(out[0][0].argmax())
            steps.append((time.perf_counter() - t0) * 1e3)
            ids.append(nxt)
        return ids, prefill, steps

    versions = {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "opset": "18"}
    try:
        import onnxscript
        versions["onnxscript"] = onnxscript.__version__
    except ImportError:
        pass
    return generate, versions


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--framework", choices=["torch", "torch-bf16", "ort"], required=True)
    p.add_argument("--weights", required=True)
    p.add_argument("--tokens", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workdir", required=True)
    p.add_argument("--warmup-tokens", type=int, default=8)
    args = p.parse_args()

    import numpy as np
    import torch
    import transformers

    start = time.perf_counter()
    prompt = [int(t) for t in args.tokens.split(",")]
    model = build_torch(args.weights, args.threads)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "numpy": np.__version__}
    if args.framework == "ort":
        generate, v = ort_decoder(model, prompt, args.threads, args.workdir)
        versions.update(v)
        del model
    else:
        if args.framework == "torch-bf16":
            model = model.to(torch.bfloat16)
        generate = torch_decoder(model)
        versions["torch_blas"] = "MKL" if torch.backends.mkl.is_available() else "?"
    generate(prompt, args.warmup_tokens)
    reply({"ready": True, "versions": versions, "setup_s": time.perf_counter() - start})

    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            break
        if cmd[0] == "generate":
            ids, prefill, steps = generate(prompt, int(cmd[1]))
            reply({"ids": ids, "prefill_ms": prefill, "step_ms": steps})
        elif cmd[0] == "profile" and args.framework != "ort":
            reply({"ops": torch_profile(generate, prompt, int(cmd[1]))})
        else:
            reply({"error": f"unknown command {line.strip()!r}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
