"""One framework's GPT-2 small, held in its own process for run_model.py.

Run with the Hugging Face venv (torch, transformers, safetensors; onnx, onnxscript and
onnxruntime for --framework ort):

  /opt/hf-venv/bin/python test/bench/model/hf_worker.py --framework torch|ort \
      --weights W.safetensors --tokens 1,2,3 --threads 2 --workdir DIR

Builds GPT2LMHeadModel (fp32, eval, HF's GPT-2-small config) and loads the checkpoint's tensors
under their docs/checkpoints.md names with the `transformer.` prefix (lm_head is tied to wte).
`torch`: times `model(input_ids).logits` under torch.inference_mode with
torch.set_num_threads(threads). `ort`: exports that model with torch.onnx.export (opset 18,
the torch.export-based exporter, static shape [1, ℓ]) and times an InferenceSession with
intra_op_num_threads=threads, inter_op_num_threads=1, sequential execution,
ORT_ENABLE_ALL graph optimizations.

Protocol: one JSON object per line on the original stdout (everything else the libraries
print goes to stderr). First {"ready": true, "versions": {...}, "setup_s": s}, then one reply
per command read from stdin:
  logits PATH   -> forward once, np.save(PATH, logits[ℓ, N_V] as float32); {"ok": true}
  time K        -> K consecutive forwards; {"ms": [..K wall-clock times..]}
  profile K DIR -> (ort only) a second session with ORT's profiler, 2 warm-up + K forwards;
                   {"ops": [[op, input shapes, output shapes, calls, ms] per forward, ...]}
  quit
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from hf_common import build_torch, reply  # noqa: E402  (first: moves fd 1 to stderr)


def logits_only(model):
    """Wrap the model so that the exported graph has one input and one output."""
    import torch

    class LogitsOnly(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids, use_cache=False).logits

    return LogitsOnly(model).eval()


def ort_profile(ort, path, so, feed, runs, workdir):
    """Per-node kernel times of the last `runs` forwards, summed per (op, shapes)."""
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(workdir, "ort_profile")
    session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    warmup = 2
    for _ in range(warmup + runs):
        session.run(["logits"], feed)
    with open(session.end_profiling()) as f:
        events = json.load(f)
    starts = sorted(e["ts"] for e in events if e.get("name") == "model_run")
    t0 = starts[warmup] if len(starts) > warmup else 0
    agg = {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time") or e["ts"] < t0:
            continue
        a = e["args"]
        shapes = lambda key: [next(iter(x.values())) for x in a.get(key, [])]  # noqa: E731
        key = json.dumps([a["op_name"], shapes("input_type_shape"), shapes("output_type_shape")])
        calls, us = agg.get(key, (0, 0.0))
        agg[key] = (calls + 1, us + e["dur"])
    return [json.loads(k) + [c / runs, us / runs / 1e3] for k, (c, us) in agg.items()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--framework", choices=["torch", "ort"], required=True)
    p.add_argument("--weights", required=True)
    p.add_argument("--tokens", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workdir", required=True)
    p.add_argument("--warmup", type=int, default=2)
    args = p.parse_args()

    import numpy as np
    import torch
    import transformers

    start = time.perf_counter()
    tokens = [int(t) for t in args.tokens.split(",")]
    ids = torch.tensor([tokens], dtype=torch.int64)
    model = build_torch(args.weights, args.threads)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "numpy": np.__version__}

    if args.framework == "torch":
        def forward():
            with torch.inference_mode():
                return model(input_ids=ids, use_cache=False).logits
        to_numpy = lambda out: out[0].numpy()  # noqa: E731
        versions["torch_blas"] = "MKL" if torch.backends.mkl.is_available() else "?"
    else:
        import onnx
        import onnxruntime as ort
        path = os.path.join(args.workdir, "gpt2.onnx")
        with torch.no_grad():
            torch.onnx.export(logits_only(model), (ids,), path, input_names=["input_ids"],
                              output_names=["logits"], opset_version=18, dynamo=True,
                              external_data=True)
        del model
        def options():
            so = ort.SessionOptions()
            so.intra_op_num_threads = args.threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            return so
        session = ort.InferenceSession(path, options(), providers=["CPUExecutionProvider"])
        feed = {"input_ids": ids.numpy()}
        versions.update(onnxruntime=ort.__version__, onnx=onnx.__version__,
                        opset=str(18))
        try:
            import onnxscript
            versions["onnxscript"] = onnxscript.__version__
        except ImportError:
            pass

        def forward():
            return session.run(["logits"], feed)[0]
        to_numpy = lambda out: out[0]  # noqa: E731

    for _ in range(args.warmup):
        forward()
    reply({"ready": True, "versions": versions, "setup_s": time.perf_counter() - start})

    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            break
        if cmd[0] == "logits":
            np.save(cmd[1], np.ascontiguousarray(to_numpy(forward()), dtype=np.float32))
            reply({"ok": True})
        elif cmd[0] == "profile" and args.framework == "ort":
            reply({"ops": ort_profile(ort, path, options(), feed, int(cmd[1]), cmd[2])})
        elif cmd[0] == "time":
            ms = []
            for _ in range(int(cmd[1])):
                t0 = time.perf_counter()
                forward()
                ms.append((time.perf_counter() - t0) * 1e3)
            reply({"ms": ms})
        else:
            reply({"error": f"unknown command {line.strip()!r}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
