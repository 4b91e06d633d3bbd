#!/usr/bin/env python3
"""How big are the errors of plausible implementation slips, next to the 1e-4 tolerance?

  /opt/xf-venv/bin/python test/reference/sensitivity.py

Runs each architecture at its test size on a random checkpoint (checkpoints.random_checkpoint,
ℓ = 16), then again with one convention deliberately broken, and prints max|Δ|/max|ref|.
A slip whose number is below 1e-4 cannot be caught by the executable-vs-oracle comparison and
needs a test of its own. The numbers are quoted in docs/correctness.md.
"""
import contextlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import architectures as A  # noqa: E402
import primitives as P  # noqa: E402
from checkpoints import hparams, random_checkpoint  # noqa: E402
from oracle import relative_error  # noqa: E402

SIZES = {"gpt2": "L=2,H=4,d_e=64,d_mlp=256,N_V=512,l_max=64",
         "bert": "L=2,H=4,d_e=64,d_mlp=256,N_V=512,l_max=64",
         "compact": "", "transformer": "", "gopher": ""}


@contextlib.contextmanager
def patched(**names):
    # replace names in architectures.py (which imported them from primitives) for one run
    old = {k: getattr(A, k) for k in names}
    for k, v in names.items():
        setattr(A, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(A, k, v)


def _scaled_attention(X, Z, W_q, b_q, W_k, b_k, W_v, b_v, mask):
    # 1/sqrt(d_e) instead of 1/sqrt(d_head): scale q and k by (d_head/d_e)^(1/4) each
    f = (W_q.shape[1] / X.shape[1]) ** 0.25
    return P.attention(X, Z, W_q * f, None if b_q is None else b_q * f, W_k * f,
                       None if b_k is None else b_k * f, W_v, b_v, mask)


SLIPS = [
    ("GELU erf and tanh forms swapped", ["gpt2", "bert", "gopher"],
     dict(gelu_tanh=P.gelu_erf, gelu_erf=P.gelu_tanh)),
    ("causal mask replaced by bidirectional", ["gpt2", "gopher", "transformer"],
     dict(causal_mask=P.bidirectional_mask)),
    ("LayerNorm ε 1e-5 -> 1e-3", ["gpt2", "compact", "transformer"],
     dict(layer_norm=lambda x, g=None, b=None, eps=0: P.layer_norm(x, g, b, 1e-3))),
    ("BERT LayerNorm ε 1e-12 -> 1e-5", ["bert"],
     dict(layer_norm=lambda x, g=None, b=None, eps=0: P.layer_norm(x, g, b, 1e-5))),
    ("RMSNorm ε 1e-5 -> 1e-6", ["gopher"],
     dict(rms_norm=lambda x, g, eps=0: P.rms_norm(x, g, 1e-6))),
    ("sinusoid sin/cos columns swapped", ["transformer"],
     dict(sinusoidal_positional_embedding=lambda l, d: P.sinusoidal_positional_embedding(
         l, d)[:, np.arange(d) ^ 1])),
    ("attention scale 1/sqrt(d_e) instead of 1/sqrt(d_head)", ["gpt2", "bert", "gopher"],
     dict(mh_attention=lambda X, Z, heads, Wo, bo, mask: P.linear(
         np.concatenate([_scaled_attention(X, Z, *h, mask) for h in heads], 1), Wo, bo))),
    ("heads concatenated in reverse order", ["gpt2", "bert", "gopher", "transformer"],
     dict(mh_attention=lambda X, Z, heads, Wo, bo, mask: P.mh_attention(
         X, Z, heads[::-1], Wo, bo, mask))),
    ("q/k/v biases dropped", ["gpt2", "bert"],
     dict(make_heads=lambda H, Wq, bq, Wk, bk, Wv, bv: P.make_heads(
         H, Wq, None, Wk, None, Wv, None))),
]


def main():
    rng = np.random.default_rng(0)
    models = {}
    for arch, h in SIZES.items():
        hp = hparams(arch, h)
        W = {k: v.astype(np.float64) for k, v in random_checkpoint(arch, hp, 1).items()}
        toks = rng.integers(0, hp["N_V"], 16).tolist()
        src = rng.integers(0, hp["N_V"], 19).tolist() if arch == "transformer" else None
        models[arch] = (hp, W, toks, src, A.forward(arch, W, hp, toks, src))
    print("| slip | max\\|Δ\\|/max\\|ref\\| |\n|---|---|")
    for label, archs, names in SLIPS:
        errs = []
        for arch in archs:
            hp, W, toks, src, ref = models[arch]
            with patched(**names):
                errs.append(f"{arch} {relative_error(A.forward(arch, W, hp, toks, src), ref):.1e}")
        print(f"| {label} | {', '.join(errs)} |")


if __name__ == "__main__":
    main()
