#!/usr/bin/env python3
"""Slow check, outside CI: the oracle against PyTorch / Hugging Face transformers.

  /opt/hf-venv/bin/python test/reference/check_against_hf.py [--full] [--tokens N]

- gpt2:   GPT2LMHeadModel logits. bert/minilm: BertModel last_hidden_state (no pooler).
  The HF model is built from a config with HF's own random init, its state dict is written to
  .safetensors by the `safetensors` package under the names of docs/checkpoints.md (GPT-2's
  `transformer.` prefix stripped), and the oracle reads that file through its CLI code path.
  A second case per model first perturbs every LayerNorm γ/β and bias (HF init leaves γ=1,
  β=0, bias=0, which would hide a misplaced γ or β).
- transformer: torch.nn.TransformerEncoderLayer/DecoderLayer (post-LN, ReLU) loaded from the
  oracle's random checkpoint; gopher and compact: assembled from torch.nn.RMSNorm /
  F.layer_norm / F.scaled_dot_product_attention / F.gelu. These are second implementations
  in another library, not an independent model definition like HF's.
Each case runs the torch side in float64 (checks the formulas: expect ~1e-15) and in float32
(what an fp32 executable would see: expect ~1e-7). Reported: max|Δ|/max|ref|, ref = oracle.
"""
import argparse
import math
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
from checkpoints import hparams, random_checkpoint  # noqa: E402
from safetensors_io import load  # noqa: E402

TMP = tempfile.mkdtemp(prefix="xf-hfcheck-")


def run_oracle(arch, hp_text, path, tokens, source=None):
    out = os.path.join(TMP, "oracle.npy")
    flag = "--hidden-out" if arch in ("bert", "minilm") else "--logits-out"
    argv = ["--arch", arch, "--hparams", hp_text, "--weights", path,
            "--tokens", ",".join(map(str, tokens)), flag, out]
    if source is not None:
        argv += ["--source-tokens", ",".join(map(str, source))]
    if oracle.main(argv) != 0:
        raise SystemExit(f"oracle failed on {arch}")
    return np.load(out)


def rel(a, ref):
    return float(np.max(np.abs(np.asarray(a, np.float64) - ref)) / np.max(np.abs(ref)))


def hp_string(hp):
    return ",".join(f"{k}={v}" for k, v in hp.items())


def perturb(model, gen):
    # γ = 1 + 0.1·noise, β and biases 0.1·noise, so their placement matters
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:  # in GPT-2 and BERT the only 1-D weights are LayerNorm γ
                base = 1.0 if name.endswith(".weight") else 0.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=gen, dtype=p.dtype))


def save_hf(model, path, strip=""):
    sd = {k[len(strip):] if k.startswith(strip) else k: v.detach().float().contiguous()
          for k, v in model.state_dict().items() if k != "lm_head.weight"}
    save_file(sd, path)


def hf_case(arch, hp, tokens, perturbed, seed=0):
    from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel
    torch.manual_seed(seed)
    if arch == "gpt2":
        cfg = GPT2Config(n_layer=hp["L"], n_head=hp["H"], n_embd=hp["d_e"], n_inner=hp["d_mlp"],
                         vocab_size=hp["N_V"], n_positions=hp["l_max"],
                         layer_norm_epsilon=hp["eps"], activation_function="gelu_new",
                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                         bos_token_id=0, eos_token_id=0)
        model = GPT2LMHeadModel(cfg).eval()
    else:
        cfg = BertConfig(vocab_size=hp["N_V"], hidden_size=hp["d_e"],
                         num_hidden_layers=hp["L"], num_attention_heads=hp["H"],
                         intermediate_size=hp["d_mlp"], max_position_embeddings=hp["l_max"],
                         layer_norm_eps=hp["eps"], hidden_act="gelu", type_vocab_size=2,
                         hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        model = BertModel(cfg, add_pooling_layer=False).eval()
    if perturbed:
        perturb(model, torch.Generator().manual_seed(seed + 1))
    path = os.path.join(TMP, f"{arch}.safetensors")
    save_hf(model, path, "transformer." if arch == "gpt2" else "")
    ref = run_oracle(arch, hp_string(hp), path, tokens)
    ids = torch.tensor([tokens])
    errs = {}
    for dt in (torch.float64, torch.float32):
        m = model.to(dt)
        with torch.no_grad():
            if arch == "gpt2":
                out = m(input_ids=ids).logits[0]
            else:
                out = m(input_ids=ids, attention_mask=torch.ones_like(ids),
                        token_type_ids=torch.zeros_like(ids)).last_hidden_state[0]
        errs[str(dt).split(".")[1]] = rel(out.numpy(), ref)
    return ref.shape, errs


# ---------------------------------------------------------------- torch second implementations

def _t(W, name, dt):
    return torch.tensor(W[name], dtype=dt)


def sinusoid_torch(length, d, dt):
    # the PyTorch-tutorial form: div_term = exp(2i · (−ln 10000 / d))
    pos = torch.arange(length, dtype=dt)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=dt) * (-math.log(10000.0) / d))
    pe = torch.zeros(length, d, dtype=dt)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe


def torch_transformer(W, hp, tokens, source, dt):
    d, H, eps = hp["d_e"], hp["H"], hp["eps"]
    nn = torch.nn

    def load_attn(mod, p):
        mod.in_proj_weight.copy_(torch.cat([_t(W, f"{p}.{w}.weight", dt) for w in "qkv"]))
        mod.in_proj_bias.copy_(torch.cat([_t(W, f"{p}.{w}.bias", dt) for w in "qkv"]))
        mod.out_proj.weight.copy_(_t(W, f"{p}.o.weight", dt))
        mod.out_proj.bias.copy_(_t(W, f"{p}.o.bias", dt))

    def load_ln(mod, p):
        mod.weight.copy_(_t(W, p + ".weight", dt))
        mod.bias.copy_(_t(W, p + ".bias", dt))

    def load_mlp(layer, p):
        for lin, n in ((layer.linear1, "fc1"), (layer.linear2, "fc2")):
            lin.weight.copy_(_t(W, f"{p}.mlp.{n}.weight", dt))
            lin.bias.copy_(_t(W, f"{p}.mlp.{n}.bias", dt))

    kw = dict(d_model=d, nhead=H, dim_feedforward=hp["d_mlp"], dropout=0.0, activation="relu",
              layer_norm_eps=eps, batch_first=True, norm_first=False, dtype=dt)
    E = W["embed.weight"]
    with torch.no_grad():
        z = torch.tensor(E[source], dtype=dt)[None] + sinusoid_torch(len(source), d, dt)
        for l in range(hp["L_enc"]):
            layer, p = nn.TransformerEncoderLayer(**kw).eval(), f"encoder.layers.{l}"
            load_attn(layer.self_attn, p + ".attn")
            load_ln(layer.norm1, p + ".ln1")
            load_ln(layer.norm2, p + ".ln2")
            load_mlp(layer, p)
            z = layer(z)
        x = torch.tensor(E[tokens], dtype=dt)[None] + sinusoid_torch(len(tokens), d, dt)
        causal = nn.Transformer.generate_square_subsequent_mask(len(tokens), dtype=dt)
        for l in range(hp["L_dec"]):
            layer, p = nn.TransformerDecoderLayer(**kw).eval(), f"decoder.layers.{l}"
            load_attn(layer.self_attn, p + ".self_attn")
            load_attn(layer.multihead_attn, p + ".cross_attn")
            for n in (1, 2, 3):
                load_ln(getattr(layer, f"norm{n}"), f"{p}.ln{n}")
            load_mlp(layer, p)
            x = layer(x, z, tgt_mask=causal, tgt_is_causal=True)
        return (x[0] @ _t(W, "unembed.weight", dt).T).numpy()


def _sdpa_heads(q, k, v, H, causal):
    # [ℓ, H·d_h] -> [H, ℓ, d_h] -> attention -> [ℓ, H·d_h]
    sh = lambda a: a.reshape(a.shape[0], H, -1).transpose(0, 1)  # noqa: E731
    o = F.scaled_dot_product_attention(sh(q), sh(k), sh(v), is_causal=causal)
    return o.transpose(0, 1).reshape(q.shape[0], -1)


def torch_gopher(W, hp, tokens, dt):
    H, d = hp["H"], hp["d_e"]
    g = lambda n: _t(W, n, dt)  # noqa: E731
    with torch.no_grad():
        x = g("embed.weight")[tokens] + g("pos_embed.weight")[:len(tokens)]
        for l in range(hp["L"]):
            p = f"layers.{l}."
            n1 = torch.nn.RMSNorm(d, eps=hp["eps"], dtype=dt)
            n1.weight.copy_(g(p + "norm1.weight"))
            a = n1(x)
            q, k, v = (F.linear(a, g(p + f"attn.{w}.weight")) for w in "qkv")
            x = x + F.linear(_sdpa_heads(q, k, v, H, True), g(p + "attn.o.weight"))
            n2 = torch.nn.RMSNorm(d, eps=hp["eps"], dtype=dt)
            n2.weight.copy_(g(p + "norm2.weight"))
            h = F.gelu(F.linear(n2(x), g(p + "mlp.fc1.weight")), approximate="tanh")
            x = x + F.linear(h, g(p + "mlp.fc2.weight"))
        nf = torch.nn.RMSNorm(d, eps=hp["eps"], dtype=dt)
        nf.weight.copy_(g("final_norm.weight"))
        return (nf(x) @ g("embed.weight").T).numpy()


def torch_compact(W, hp, tokens, dt):
    H, d, eps = hp["H"], hp["d_e"], hp["eps"]
    g = lambda n: _t(W, n, dt)  # noqa: E731
    with torch.no_grad():
        x = g("tok_emb.weight")[tokens] + g("pos_emb.weight")[:len(tokens)]
        for l in range(hp["L"]):
            p = f"layers.{l}."
            a = sum(F.scaled_dot_product_attention(x @ g(p + f"attn.{h}.w_q"),
                                                   x @ g(p + f"attn.{h}.w_k"),
                                                   x @ g(p + f"attn.{h}.w_v"))
                    @ g(p + f"attn.{h}.w_o").T for h in range(H))
            y = F.layer_norm(x + a, (d,), eps=eps)
            f = F.linear(F.relu(F.linear(y, g(p + "ffn.w1"), g(p + "ffn.b1"))),
                         g(p + "ffn.w2"), g(p + "ffn.b2"))
            x = F.layer_norm(y + f, (d,), eps=eps)
        return (x @ g("unembed.weight")).numpy()


def torch_case(arch, hp, tokens, source, seed=0):
    path = os.path.join(TMP, f"{arch}.safetensors")
    save_file({k: torch.from_numpy(v) for k, v in random_checkpoint(arch, hp, seed).items()},
              path)
    ref = run_oracle(arch, hp_string(hp), path, tokens, source)
    W = load(path)
    errs = {}
    for dt in (torch.float64, torch.float32):
        if arch == "transformer":
            out = torch_transformer(W, hp, tokens, source, dt)
        elif arch == "gopher":
            out = torch_gopher(W, hp, tokens, dt)
        else:
            out = torch_compact(W, hp, tokens, dt)
        errs[str(dt).split(".")[1]] = rel(out, ref)
    return ref.shape, errs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="also the default (full) sizes")
    ap.add_argument("--tokens", type=int, default=16, help="sequence length ℓ")
    args = ap.parse_args()
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"numpy {np.__version__}; ℓ = {args.tokens}; error = max|Δ|/max|ref|, ref = oracle")
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    tiny = {"gpt2": "L=2,H=4,d_e=64,d_mlp=256,N_V=512,l_max=64",
            "bert": "L=2,H=4,d_e=64,d_mlp=256,N_V=512,l_max=64",
            "minilm": "L=2,H=4,d_e=48,d_mlp=160,N_V=512,l_max=64",
            "compact": "", "transformer": "", "gopher": ""}
    cases = list(tiny.items())
    if args.full:
        cases += [("gpt2", None), ("bert", None), ("minilm", None)]
    print("| arch | size | init | torch fp64 | torch fp32 | output |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for arch, h in cases:
        hp = hparams(arch, h or "")
        size = "default" if h is None else (h or "default")
        toks = rng.integers(0, hp["N_V"], args.tokens).tolist()
        if arch in ("gpt2", "bert", "minilm"):
            runs = [("HF init", False), ("γ/β/bias perturbed", True)]
            for label, pert in runs:
                shape, e = hf_case(arch, hp, toks, pert)
                worst = max(worst, e["float64"])
                print(f"| {arch} (HF) | {size} | {label} | {e['float64']:.2e} | "
                      f"{e['float32']:.2e} | {list(shape)} |", flush=True)
        else:
            src = rng.integers(0, hp["N_V"], args.tokens + 3).tolist() \
                if arch == "transformer" else None
            shape, e = torch_case(arch, hp, toks, src)
            worst = max(worst, e["float64"])
            print(f"| {arch} (torch) | {size} | oracle random | {e['float64']:.2e} | "
                  f"{e['float32']:.2e} | {list(shape)} |", flush=True)
    ok = worst < 1e-10
    print(f"worst float64 error {worst:.2e}: {'agree' if ok else 'DISAGREE'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
