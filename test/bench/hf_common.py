"""Shared by the /opt/hf-venv worker processes of the whole-model benchmarks
(model/hf_worker.py, decode/decode_worker.py): the JSON line protocol on the original stdout
and GPT2LMHeadModel built from a GPT-2-small checkpoint.

Import it first: it moves fd 1 to stderr, so whatever the libraries print (the ONNX exporter
prints progress) cannot corrupt the protocol."""
import json
import os
import sys

PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr


def reply(obj):
    PROTO.write(json.dumps(obj) + "\n")
    PROTO.flush()


def build_torch(weights, threads):
    """GPT2LMHeadModel (fp32, eval, HF's GPT-2-small config) holding the checkpoint's tensors
    under their docs/checkpoints.md names with the `transformer.` prefix (lm_head tied to wte)."""
    import torch
    from safetensors.torch import load_file
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.set_num_threads(threads)
    cfg = GPT2Config(n_layer=12, n_head=12, n_embd=768, n_inner=3072, vocab_size=50257,
                     n_positions=1024, layer_norm_epsilon=1e-5,
                     activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0, use_cache=False, tie_word_embeddings=True)
    model = GPT2LMHeadModel(cfg)
    state = {"transformer." + k: v.float() for k, v in load_file(weights).items()}
    result = model.load_state_dict(state, strict=False)
    missing = [k for k in result.missing_keys if k != "lm_head.weight"]
    if missing or result.unexpected_keys:
        raise SystemExit(f"checkpoint does not match GPT2LMHeadModel: missing {missing}, "
                         f"unexpected {result.unexpected_keys}")
    if model.lm_head.weight.data_ptr() != model.transformer.wte.weight.data_ptr():
        raise SystemExit("lm_head is not tied to wte")
    return model.eval().float()
