"""Whole architectures from random checkpoints: output shapes, mask and position properties,
and two second derivations written differently from architectures.py (the seed-000 formula
token by token, and GPT-2 / Gopher through Alg. 3 single-query attention)."""
import math

import numpy as np
import pytest

import safetensors_io as st
from architectures import forward
from checkpoints import ARCHS, DECODERS, hparams, random_checkpoint
from primitives import single_query_attention, split_heads

SMALL = {
    "gpt2": "L=2,H=2,d_e=16,d_mlp=24,N_V=37,l_max=12",
    "bert": "L=2,H=4,d_e=16,d_mlp=24,N_V=37,l_max=12",
    "minilm": "L=3,H=2,d_e=12,d_mlp=20,N_V=29,l_max=10",
    "bert_mlm": "L=2,H=4,d_e=16,d_mlp=24,N_V=37,l_max=12",
    "compact": "L=2,H=3,d_e=16,d_qk=5,d_vo=6,d_ff=24,N_V=37,l_max=12",
    "transformer": "L_enc=2,L_dec=2,H=2,d_e=16,d_mlp=24,N_V=37",
    "gopher": "L=2,H=4,d_e=16,d_mlp=24,N_V=37,l_max=12",
    "llama": "L=2,H=4,H_kv=2,d_e=32,d_mlp=24,N_V=37,l_max=12",
    "llama_hf": "L=2,H=4,H_kv=1,d_e=32,d_mlp=24,N_V=37,l_max=12",
}
TOKENS = [3, 14, 15, 9, 2, 6]
SOURCE = [27, 1, 8, 28, 18]


def _model(arch, tmp_path=None, seed=11):
    hp = hparams(arch, SMALL[arch])
    w = random_checkpoint(arch, hp, seed)
    if tmp_path is not None:  # go through a file, as the CLI does
        st.save(tmp_path / "w.safetensors", w)
        return st.load(tmp_path / "w.safetensors"), hp
    return {k: v.astype(np.float64) for k, v in w.items()}, hp


def _run(arch, W, hp, tokens, source=SOURCE):
    return forward(arch, W, hp, tokens, source if arch == "transformer" else None)


@pytest.mark.parametrize("arch", ARCHS)
def test_end_to_end_shapes_and_scale(arch, tmp_path):
    W, hp = _model(arch, tmp_path)
    out = _run(arch, W, hp, TOKENS)
    width = hp["N_V"] if arch in DECODERS else hp["d_e"]
    assert out.shape == (len(TOKENS), width) and out.dtype == np.float64
    assert np.all(np.isfinite(out))
    # O(1) activations: neither vanishing nor blowing up, and rows differ by position
    assert 0.3 < out.std() < 5.0, out.std()
    assert np.abs(np.diff(out, axis=0)).max() > 0.1
    assert _run(arch, W, hp, TOKENS[:1]).shape == (1, width)


@pytest.mark.parametrize("arch", ["gpt2", "gopher", "transformer", "llama", "llama_hf"])
def test_causal_archs_ignore_later_tokens(arch):
    W, hp = _model(arch)
    a = _run(arch, W, hp, TOKENS)
    b = _run(arch, W, hp, TOKENS[:-1] + [TOKENS[-1] + 1])
    np.testing.assert_allclose(a[:-1], b[:-1], rtol=1e-12, atol=1e-12)
    assert np.abs(a[-1] - b[-1]).max() > 1e-3
    # a prefix gives the prefix's rows
    np.testing.assert_allclose(_run(arch, W, hp, TOKENS[:3]), a[:3], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("arch", ["bert", "minilm", "compact"])
def test_bidirectional_archs_see_later_tokens(arch):
    W, hp = _model(arch)
    a = _run(arch, W, hp, TOKENS)
    b = _run(arch, W, hp, TOKENS[:-1] + [TOKENS[-1] + 1])
    assert np.abs(a[0] - b[0]).max() > 1e-3


@pytest.mark.parametrize("arch", ["bert", "compact"])
def test_positions_are_added(arch):
    # without positions, bidirectional attention is permutation-equivariant: the middle token of
    # a reversed odd-length sequence would give the same row
    W, hp = _model(arch)
    seq = [5, 7, 11]
    assert np.abs(_run(arch, W, hp, seq)[1] - _run(arch, W, hp, seq[::-1])[1]).max() > 1e-3


def test_transformer_depends_on_source_and_its_order():
    W, hp = _model("transformer")
    a = _run("transformer", W, hp, TOKENS)
    # every target row sees the whole source (cross mask is all ones)
    b = _run("transformer", W, hp, TOKENS, SOURCE[:-1] + [SOURCE[-1] + 1])
    assert np.abs(a - b).max(axis=1).min() > 1e-4
    # cross-attention alone is permutation-invariant over keys, so a reversed source changes
    # the output only through the encoder's sinusoidal positions
    c = _run("transformer", W, hp, TOKENS, SOURCE[::-1])
    assert np.abs(a - c).max() > 1e-3
    with pytest.raises(ValueError):
        _run("transformer", W, hp, TOKENS, [])


def test_bert_adds_token_type_row_zero_only():
    W, hp = _model("bert")
    a = _run("bert", W, hp, TOKENS)
    W1, name = dict(W), "embeddings.token_type_embeddings.weight"
    W1[name] = W[name] * [[1.0], [5.0]]  # scale row 1: no effect
    np.testing.assert_array_equal(_run("bert", W1, hp, TOKENS), a)
    W1[name] = W[name] * [[5.0], [1.0]]  # scale row 0: changes everything
    assert np.abs(_run("bert", W1, hp, TOKENS) - a).max() > 1e-3


def test_length_beyond_l_max_is_rejected():
    W, hp = _model("gpt2")
    with pytest.raises(ValueError, match="l_max"):
        _run("gpt2", W, hp, [1] * (hp["l_max"] + 1))
    with pytest.raises(ValueError):
        _run("gpt2", W, hp, [hp["N_V"]])


# ---------------------------------------------------------------- second derivations

def _ln(z, eps, g=1.0, b=0.0):
    return (z - z.mean()) / math.sqrt(z.var() + eps) * g + b


def _softmax(s):
    e = np.exp(s - s.max())
    return e / e.sum()


def test_compact_equals_seed_000_formula():
    # seed 000, eq. (4)-(6), one position t at a time in the seed's own column form
    W, hp = _model("compact")
    L, H, eps = hp["L"], hp["H"], hp["eps"]
    s = TOKENS
    X = np.array([W["tok_emb.weight"][s[t]] + W["pos_emb.weight"][t] for t in range(len(s))])
    for l in range(L):
        g = lambda n: W[f"layers.{l}.{n}"]  # noqa: E731
        Y = np.empty_like(X)
        for t in range(len(s)):
            z = X[t]
            attn = sum(_softmax(z @ g(f"attn.{h}.w_q") @ g(f"attn.{h}.w_k").T @ X.T
                                / math.sqrt(hp["d_qk"])) @ X @ g(f"attn.{h}.w_v")
                       @ g(f"attn.{h}.w_o").T for h in range(H))
            Y[t] = _ln(z + attn, eps)
        for t in range(len(s)):
            ffn = g("ffn.w2") @ np.maximum(g("ffn.w1") @ Y[t] + g("ffn.b1"), 0) + g("ffn.b2")
            X[t] = _ln(Y[t] + ffn, eps)
    np.testing.assert_allclose(_run("compact", W, hp, s), X @ W["unembed.weight"], rtol=1e-11,
                               atol=1e-11)


def _alg3_mha(a, t, heads, Wo, bo):
    # Alg. 3 for query t over context rows 0..t (causal), per head, then W_o
    y = np.concatenate([single_query_attention(a[t], a[:t + 1], *hd) for hd in heads])
    return y @ Wo + (0 if bo is None else bo)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def test_gpt2_equals_token_by_token_alg3():
    W, hp = _model("gpt2")
    d, H, eps = hp["d_e"], hp["H"], hp["eps"]
    s = TOKENS
    X = W["wte.weight"][s] + W["wpe.weight"][:len(s)]
    for l in range(hp["L"]):
        g = lambda n: W[f"h.{l}.{n}"]  # noqa: E731
        Wa, ba = g("attn.c_attn.weight"), g("attn.c_attn.bias")
        q, k, v = ([split_heads(Wa[:, i * d:(i + 1) * d], ba[i * d:(i + 1) * d], H)[h]
                    for h in range(H)] for i in range(3))
        heads = [q[h] + k[h] + v[h] for h in range(H)]
        A = np.array([_ln(x, eps, g("ln_1.weight"), g("ln_1.bias")) for x in X])
        X = X + np.array([_alg3_mha(A, t, heads, g("attn.c_proj.weight"), g("attn.c_proj.bias"))
                          for t in range(len(s))])
        for t in range(len(s)):
            m = _ln(X[t], eps, g("ln_2.weight"), g("ln_2.bias"))
            X[t] = X[t] + _gelu_tanh(m @ g("mlp.c_fc.weight") + g("mlp.c_fc.bias")) \
                @ g("mlp.c_proj.weight") + g("mlp.c_proj.bias")
    logits = np.array([_ln(x, eps, W["ln_f.weight"], W["ln_f.bias"]) @ W["wte.weight"].T
                       for x in X])
    np.testing.assert_allclose(_run("gpt2", W, hp, s), logits, rtol=1e-11, atol=1e-11)


def test_gopher_equals_token_by_token_alg3():
    W, hp = _model("gopher")
    H, eps = hp["H"], hp["eps"]
    rms = lambda x, g: x / math.sqrt((x * x).mean() + eps) * g  # noqa: E731
    s = TOKENS
    X = W["embed.weight"][s] + W["pos_embed.weight"][:len(s)]
    for l in range(hp["L"]):
        g = lambda n: W[f"layers.{l}.{n}"]  # noqa: E731
        q, k, v = (split_heads(g(f"attn.{w}.weight").T, None, H) for w in "qkv")
        heads = [q[h] + k[h] + v[h] for h in range(H)]
        A = np.array([rms(x, g("norm1.weight")) for x in X])
        X = X + np.array([_alg3_mha(A, t, heads, g("attn.o.weight").T, None)
                          for t in range(len(s))])
        for t in range(len(s)):
            m = rms(X[t], g("norm2.weight"))
            X[t] = X[t] + g("mlp.fc2.weight") @ _gelu_tanh(g("mlp.fc1.weight") @ m)
    logits = np.array([rms(x, W["final_norm.weight"]) @ W["embed.weight"].T for x in X])
    np.testing.assert_allclose(_run("gopher", W, hp, s), logits, rtol=1e-11, atol=1e-11)


def test_llama_gguf_equals_hf_after_converter_permutation():
    # llama.cpp's convert_hf_to_gguf permutes attn_q / attn_k rows per head
    # (reshape(H, 2, d/2, in).swapaxes(1, 2)) so that rope = adjacent on the GGUF file computes
    # what rope = halves computes on the Hugging Face file: both layouts of one model agree.
    W_hf, hp = _model("llama_hf")
    from architectures import LLAMA_NAMES
    hf, gg = LLAMA_NAMES["llama_hf"], LLAMA_NAMES["llama"]

    def permute(w, heads):
        return w.reshape(heads, 2, w.shape[0] // heads // 2, w.shape[1]) \
                .swapaxes(1, 2).reshape(w.shape)

    W_gg = {}
    for key in ("embed", "norm"):
        W_gg[gg[key]] = W_hf[hf[key]]
    for l in range(hp["L"]):
        a, b = hf["layer"].format(l=l), gg["layer"].format(l=l)
        for key in ("attn_norm", "v", "o", "ffn_norm", "gate", "up", "down"):
            W_gg[b + gg[key]] = W_hf[a + hf[key]]
        W_gg[b + gg["q"]] = permute(W_hf[a + hf["q"]], hp["H"])
        W_gg[b + gg["k"]] = permute(W_hf[a + hf["k"]], hp["H_kv"])
    np.testing.assert_allclose(_run("llama", W_gg, hp, TOKENS), _run("llama_hf", W_hf, hp, TOKENS),
                               rtol=1e-11, atol=1e-11)
    # and the permutation matters: unpermuted weights under adjacent pairs differ
    W_bad = dict(W_gg)
    for l in range(hp["L"]):
        b = gg["layer"].format(l=l)
        W_bad[b + gg["q"]] = W_hf[hf["layer"].format(l=l) + hf["q"]]
    assert np.abs(_run("llama", W_bad, hp, TOKENS) - _run("llama_hf", W_hf, hp, TOKENS)).max() > 1e-3


def test_kv_float16_only_for_cached_decoders():
    with pytest.raises(ValueError, match="float16 KV cache"):
        forward("bert", {}, {}, [1], kv_float16=True)
