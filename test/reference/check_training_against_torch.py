#!/usr/bin/env python3
"""Slow check, outside CI: training.py against PyTorch autograd and torch.optim.AdamW.

  /opt/hf-venv/bin/python test/reference/check_training_against_torch.py

- The loss and every gradient of gpt2_loss_and_grads against Hugging Face GPT2LMHeadModel's
  logits, the next-token cross-entropy (mean over positions) and loss.backward() in float64, on a random checkpoint whose LayerNorms and biases are
  not at their initial values (γ = 1, β = 0 would hide a misplaced term); the tied lm_head
  accumulates into wte as in the oracle.
- Three AdamW steps (warm-up + cosine rate, global-norm clipping, weight decay on matrices
  only) against torch.optim.AdamW with two parameter groups and clip_grad_norm_.
Reported: max|Δ|/max|ref| per tensor, ref = oracle; float64 on both sides, expect ~1e-14.
"""
import os
import sys

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoints import hparams, random_checkpoint  # noqa: E402
import training  # noqa: E402


def rel(a, ref):
    return float(np.max(np.abs(a - ref)) / max(np.max(np.abs(ref)), 1e-300))


def gradients():
    hp = hparams("gpt2", "L=2,H=2,d_e=16,d_mlp=64,N_V=37,l_max=12")
    W = {k: np.asarray(v, dtype=np.float64) for k, v in random_checkpoint("gpt2", hp, 9).items()}
    tokens = [3, 14, 15, 9, 2, 6, 14, 30]
    loss, grads = training.gpt2_loss_and_grads(W, hp, tokens[:-1], np.array(tokens[1:]))
    config = GPT2Config(vocab_size=hp["N_V"], n_positions=hp["l_max"], n_embd=hp["d_e"],
                        n_layer=hp["L"], n_head=hp["H"], n_inner=hp["d_mlp"],
                        activation_function="gelu_new", layer_norm_epsilon=hp["eps"],
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config).double().eval()
    state = {"transformer." + k: torch.tensor(v) for k, v in W.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all(m == "lm_head.weight" or m.endswith("attn.bias")
                                  or m.endswith("masked_bias") for m in missing), missing
    # HF's own labels= loss runs in float32; the same shifted mean, in float64:
    logits = model(torch.tensor([tokens])).logits[0]
    torch_loss = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(tokens[1:]))
    torch_loss.backward()
    worst = abs(torch_loss.item() - loss) / loss
    print(f"loss: torch {torch_loss.item():.15f} oracle {loss:.15f}")
    params = dict(model.named_parameters())
    for name, g in grads.items():
        err = rel(params["transformer." + name].grad.numpy(), g)
        worst = max(worst, err)
        print(f"  {name:28s} {err:.1e}")
    return worst


def adamw():
    rng = np.random.default_rng(3)
    w0, b0 = rng.normal(size=(5, 7)), rng.normal(size=7)
    grads = [(rng.normal(size=(5, 7)) * s, rng.normal(size=7) * s) for s in (3.0, 0.1, 1.0)]
    lr, warmup, total, min_lr, wd, max_norm = 0.05, 2, 3, 0.005, 0.1, 2.0
    w, b = torch.tensor(w0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    opt = torch.optim.AdamW([{"params": [w], "weight_decay": wd},
                             {"params": [b], "weight_decay": 0.0}], lr=lr)
    params, state = {"w": w0, "b": b0}, {}
    for step, (gw, gb) in enumerate(grads):
        rate = training.learning_rate(step, lr, warmup, total, min_lr)
        for group in opt.param_groups:
            group["lr"] = rate
        w.grad, b.grad = torch.tensor(gw), torch.tensor(gb)
        torch.nn.utils.clip_grad_norm_([w, b], max_norm)
        opt.step()
        g, _ = training.clip_by_global_norm({"w": gw, "b": gb}, max_norm)
        params = training.adamw_step(params, g, state, step + 1, rate, weight_decay=wd)
    errs = rel(w.detach().numpy(), params["w"]), rel(b.detach().numpy(), params["b"])
    print(f"AdamW, 3 steps: w {errs[0]:.1e}, b {errs[1]:.1e}")
    return max(errs)


if __name__ == "__main__":
    worst = max(gradients(), adamw())
    print(f"worst {worst:.1e}")
    sys.exit(0 if worst < 1e-12 else 1)
