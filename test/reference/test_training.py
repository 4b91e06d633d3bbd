"""training.py against central finite differences in float64, and the optimizers by hand.

Gradient error measure (docs/training.md): max|analytic − numeric| / max|numeric| over the
checked entries; central differences with h = 1e-6 are accurate to ~1e-9 here, so the bound
1e-7 fails on any wrong term of a rule."""
import math

import numpy as np
import pytest

from architectures import gpt2_forward
from checkpoints import hparams, random_checkpoint
from primitives import (causal_mask, gelu_erf, gelu_tanh, layer_norm, relu, rms_norm,
                        rotary_embedding, silu)
from training import (adamw_step, attention_heads, attention_heads_backward,
                      clip_by_global_norm, gelu_erf_backward, gelu_tanh_backward, gpt2_loss_and_grads,
                      layer_norm_backward, learning_rate, linear_backward, mask_tokens,
                      masked_token_loss, masked_token_loss_backward, next_token_loss,
                      next_token_loss_backward, positional_embedding_backward, relu_backward,
                      rms_norm_backward, rotary_backward, sgd_step, silu_backward,
                      token_embedding_backward)

H_STEP = 1e-6
TOL = 1e-7


def numeric_grad(f, x, entries=None):
    # ∂f/∂x[i] ≈ (f(x + h·e_i) − f(x − h·e_i)) / 2h for the listed flat indices (all by default)
    x = np.array(x, dtype=np.float64)
    flat = x.reshape(-1)
    idx = range(flat.size) if entries is None else entries
    out = {}
    for i in idx:
        old = flat[i]
        flat[i] = old + H_STEP
        up = f(x)
        flat[i] = old - H_STEP
        down = f(x)
        flat[i] = old
        out[i] = (up - down) / (2 * H_STEP)
    return out


def rel_error(analytic, numeric):
    a = np.array([analytic.reshape(-1)[i] for i in numeric])
    n = np.array(list(numeric.values()))
    return np.max(np.abs(a - n)) / np.max(np.abs(n))


def check(analytic, f, x, entries=None):
    err = rel_error(np.asarray(analytic), numeric_grad(f, x, entries))
    assert err < TOL, err


rng = np.random.default_rng(5)
ELL, D = 5, 8


def test_next_token_loss_backward():
    logits, targets = rng.normal(size=(ELL, 11)), rng.integers(0, 11, ELL)
    check(next_token_loss_backward(logits, targets), lambda z: next_token_loss(z, targets), logits)


def test_next_token_loss_value():
    # uniform logits: −log(1/N_V) per row
    assert next_token_loss(np.zeros((3, 7)), [1, 2, 3]) == pytest.approx(math.log(7), abs=1e-15)


def test_masked_token_loss_backward():
    logits, tokens = rng.normal(size=(7, 11)), rng.integers(0, 11, 7)
    masked = np.array([1, 4, 5])
    g = masked_token_loss_backward(logits, tokens, masked)
    check(g, lambda z: masked_token_loss(z, tokens, masked), logits)
    assert np.all(g[[0, 2, 3, 6]] == 0)  # unmasked positions get no gradient


def test_masked_token_loss_value_and_rule():
    # uniform logits: −log(1/N_V) per masked row; no masked row: 0
    assert masked_token_loss(np.zeros((4, 7)), [1, 2, 3, 4], np.array([0, 3])) == \
        pytest.approx(math.log(7), abs=1e-15)
    assert masked_token_loss(np.zeros((4, 7)), [1, 2, 3, 4], np.array([], dtype=int)) == 0.0
    x, T = mask_tokens([5, 6, 7, 8], [0.5, 0.1, 0.9, 0.14], 0.15, 99)
    assert list(x) == [5, 99, 7, 99] and list(T) == [1, 3]


def test_linear_backward():
    x, W, b, u = rng.normal(size=(ELL, D)), rng.normal(size=(D, 6)), rng.normal(size=6), \
        rng.normal(size=(ELL, 6))
    dx, dW, db = linear_backward(x, W, u)
    check(dx, lambda z: np.sum(u * (z @ W + b)), x)
    check(dW, lambda z: np.sum(u * (x @ z + b)), W)
    check(db, lambda z: np.sum(u * (x @ W + z)), b)


def test_layer_norm_backward():
    x, g, b, u = rng.normal(size=(ELL, D)), rng.normal(size=D), rng.normal(size=D), \
        rng.normal(size=(ELL, D))
    dx, dg, db = layer_norm_backward(x, g, 1e-5, u)
    check(dx, lambda z: np.sum(u * layer_norm(z, g, b, 1e-5)), x)
    check(dg, lambda z: np.sum(u * layer_norm(x, z, b, 1e-5)), g)
    check(db, lambda z: np.sum(u * layer_norm(x, g, z, 1e-5)), b)


def test_rms_norm_backward():
    x, g, u = rng.normal(size=(ELL, D)), rng.normal(size=D), rng.normal(size=(ELL, D))
    dx, dg = rms_norm_backward(x, g, 1e-5, u)
    check(dx, lambda z: np.sum(u * rms_norm(z, g, 1e-5)), x)
    check(dg, lambda z: np.sum(u * rms_norm(x, z, 1e-5)), g)


def test_relu_and_silu_backward():
    x, u = 2 * rng.normal(size=(ELL, D)), rng.normal(size=(ELL, D))
    check(relu_backward(x, u), lambda z: np.sum(u * relu(z)), x)
    check(silu_backward(x, u), lambda z: np.sum(u * silu(z)), x)


def test_gelu_tanh_backward():
    x, u = 2 * rng.normal(size=(ELL, D)), rng.normal(size=(ELL, D))
    check(gelu_tanh_backward(x, u), lambda z: np.sum(u * gelu_tanh(z)), x)


def test_gelu_erf_backward():
    x, u = 2 * rng.normal(size=(ELL, D)), rng.normal(size=(ELL, D))
    x[0, 0] = 0.0
    check(gelu_erf_backward(x, u), lambda z: np.sum(u * gelu_erf(z)), x)


@pytest.mark.parametrize("heads", [1, 2])
def test_attention_backward(heads):
    Q, K, V = (rng.normal(size=(ELL, 4 * heads)) for _ in range(3))
    u = rng.normal(size=(ELL, 4 * heads))
    mask = causal_mask(ELL)
    dQ, dK, dV = attention_heads_backward(Q, K, V, heads, mask, u)
    check(dQ, lambda z: np.sum(u * attention_heads(z, K, V, heads, mask)), Q)
    check(dK, lambda z: np.sum(u * attention_heads(Q, z, V, heads, mask)), K)
    check(dV, lambda z: np.sum(u * attention_heads(Q, K, z, heads, mask)), V)


def test_grouped_attention_backward():
    Q, u = rng.normal(size=(ELL, 12)), rng.normal(size=(ELL, 12))   # 4 query heads of 3
    K, V = rng.normal(size=(ELL, 6)), rng.normal(size=(ELL, 6))     # 2 key/value heads
    mask = causal_mask(ELL)
    dQ, dK, dV = attention_heads_backward(Q, K, V, 4, mask, u, kv_heads=2)
    check(dQ, lambda z: np.sum(u * attention_heads(z, K, V, 4, mask, 2)), Q)
    check(dK, lambda z: np.sum(u * attention_heads(Q, z, V, 4, mask, 2)), K)
    check(dV, lambda z: np.sum(u * attention_heads(Q, K, z, 4, mask, 2)), V)


@pytest.mark.parametrize("pairing", ["adjacent", "halves"])
def test_rotary_backward(pairing):
    x, u = rng.normal(size=(ELL, 12)), rng.normal(size=(ELL, 12))
    check(rotary_backward(u, 3, 100.0, pairing),
          lambda z: np.sum(u * rotary_embedding(z, 3, 100.0, pairing)), x)


def test_embedding_backward():
    tokens, u = [3, 1, 3, 0, 6], rng.normal(size=(ELL, D))   # token 3 twice: accumulates
    E, P = rng.normal(size=(7, D)), rng.normal(size=(9, D))
    check(token_embedding_backward(7, tokens, u), lambda z: np.sum(u * z[tokens]), E)
    check(positional_embedding_backward(9, u), lambda z: np.sum(u * z[:ELL]), P)


def gpt2_case(seed=3):
    hp = hparams("gpt2", "L=2,H=2,d_e=16,d_mlp=24,N_V=37,l_max=12")
    W = {k: np.asarray(v, dtype=np.float64) for k, v in random_checkpoint("gpt2", hp, seed).items()}
    tokens = [3, 14, 15, 9, 2, 6, 14]
    return hp, W, tokens[:-1], np.array(tokens[1:])


def test_gpt2_loss_matches_the_forward():
    hp, W, x, y = gpt2_case()
    loss, _ = gpt2_loss_and_grads(W, hp, x, y)
    assert loss == pytest.approx(next_token_loss(gpt2_forward(W, hp, x), y), rel=1e-14)


def test_gpt2_gradients_every_tensor():
    # every tensor of the tiny GPT-2, 8 random entries each (all entries of the vectors)
    hp, W, x, y = gpt2_case()
    _, grads = gpt2_loss_and_grads(W, hp, x, y)
    pick = np.random.default_rng(1)
    for name, value in W.items():
        entries = range(value.size) if value.ndim == 1 else pick.choice(value.size, 8, False)
        if name == "wte.weight":  # rows of the tokens seen (embedding) and all (unembedding)
            entries = list(entries) + [3 * value.shape[1] + 1, 14 * value.shape[1] + 5]

        def loss_of(z, name=name):
            return next_token_loss(gpt2_forward({**W, name: z}, hp, x), y)
        err = rel_error(grads[name], numeric_grad(loss_of, value, entries))
        assert err < 1e-6, (name, err)


def test_learning_rate_schedule():
    assert learning_rate(0, 1.0, 4, 20) == pytest.approx(0.25)
    assert learning_rate(3, 1.0, 4, 20) == pytest.approx(1.0)
    assert learning_rate(12, 1.0, 4, 20) == pytest.approx(0.5)     # halfway down the cosine
    assert learning_rate(20, 1.0, 4, 20, 0.1) == pytest.approx(0.1)


def test_clip_by_global_norm():
    g, norm = clip_by_global_norm({"a": np.array([3.0]), "b": np.array([[4.0]])}, 1.0)
    assert norm == 5.0
    assert g["a"][0] == pytest.approx(0.6 / (1 + 2e-7)) and g["b"][0, 0] == pytest.approx(0.8)
    g, _ = clip_by_global_norm({"a": np.array([0.3])}, 1.0)
    assert g["a"][0] == 0.3


def test_adamw_by_hand():
    # two steps on one matrix entry and one bias, written out from the update rule
    p = {"w": np.array([[1.0]]), "b": np.array([0.5])}
    g = {"w": np.array([[0.2]]), "b": np.array([-0.1])}
    state = {}
    lr, wd = 0.1, 0.01
    p1 = adamw_step(p, g, state, 1, lr, weight_decay=wd)
    # step 1: m̂ = g, v̂ = g², update = lr·g/(|g| + ε)
    assert p1["w"][0, 0] == pytest.approx(1.0 - lr * wd * 1.0 - lr * 0.2 / (0.2 + 1e-8), rel=1e-15)
    assert p1["b"][0] == pytest.approx(0.5 + lr * 0.1 / (0.1 + 1e-8), rel=1e-15)   # no decay
    p2 = adamw_step(p1, g, state, 2, lr, weight_decay=wd)
    m = 0.9 * 0.1 * 0.2 + 0.1 * 0.2
    v = 0.999 * 0.001 * 0.04 + 0.001 * 0.04
    w1 = p1["w"][0, 0]
    expect = w1 - lr * wd * w1 - lr * (m / (1 - 0.81)) / (math.sqrt(v / (1 - 0.999 ** 2)) + 1e-8)
    assert p2["w"][0, 0] == pytest.approx(expect, rel=1e-15)


def test_sgd_step():
    out = sgd_step({"w": np.array([1.0, 2.0])}, {"w": np.array([0.5, -1.0])}, 0.1)
    assert np.allclose(out["w"], [0.95, 2.1], rtol=0, atol=1e-15)
