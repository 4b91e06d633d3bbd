"""Each primitive against values worked out by hand (or with the math module on a hand-derived
argument), so a wrong formula, axis or convention fails."""
import math

import numpy as np
import pytest

import primitives as P

rng = np.random.default_rng(0)


def test_softmax_known_vector():
    # e^1, e^2, e^3 over their sum
    want = [0.09003057317038046, 0.24472847105479764, 0.6652409557748219]
    np.testing.assert_allclose(P.softmax([1.0, 2.0, 3.0]), want, rtol=1e-15)
    # shifting by a constant changes nothing and large inputs do not overflow
    np.testing.assert_allclose(P.softmax([1001.0, 1002.0, 1003.0]), want, rtol=1e-14)
    # masked (-inf) entries get exactly zero weight
    np.testing.assert_array_equal(P.softmax([0.0, -np.inf, 0.0]), [0.5, 0.0, 0.5])
    # rows are normalised independently along the last axis
    S = np.array([[0.0, 0.0], [0.0, math.log(3.0)]])
    np.testing.assert_allclose(P.softmax(S), [[0.5, 0.5], [0.25, 0.75]], rtol=1e-15)


def test_relu_and_gelu_known_points():
    np.testing.assert_array_equal(P.relu([-2.0, 0.0, 3.5]), [0.0, 0.0, 3.5])
    assert P.gelu_erf(1.0) == pytest.approx(0.8413447460685429, rel=1e-15)
    assert P.gelu_erf(-1.0) == pytest.approx(-0.15865525393145707, rel=1e-14)  # -Φ(-1)
    assert P.gelu_tanh(1.0) == pytest.approx(0.8411919906082768, rel=1e-15)
    assert P.gelu_erf(0.0) == 0.0 and P.gelu_tanh(0.0) == 0.0
    # the two forms differ slightly; both tend to x for large x and to 0 for very negative x
    assert abs(P.gelu_erf(1.0) - P.gelu_tanh(1.0)) > 1e-4
    np.testing.assert_allclose(P.gelu_erf([10.0, -10.0]), [10.0, 0.0], atol=1e-20)
    np.testing.assert_allclose(P.gelu_tanh([10.0, -10.0]), [10.0, 0.0], atol=1e-20)
    # works elementwise on arrays
    assert P.gelu_erf(np.ones((2, 3))).shape == (2, 3)


def test_layer_norm_constant_vector_gives_beta():
    gamma, beta = rng.standard_normal(6), rng.standard_normal(6)
    np.testing.assert_array_equal(P.layer_norm(np.full(6, 2.5), gamma, beta), beta)
    # 3.7 is not a binary fraction: mean(x) misses by an ulp, amplified by 1/sqrt(ε) ≈ 316
    np.testing.assert_allclose(P.layer_norm(np.full(6, 3.7), gamma, beta), beta, atol=1e-12)


def test_layer_norm_known_case():
    x = [1.0, 2.0, 3.0, 4.0]  # mean 2.5, biased var 1.25
    s = math.sqrt(1.25)
    np.testing.assert_allclose(P.layer_norm(x, eps=0.0), [-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s],
                               rtol=1e-15)
    out = P.layer_norm(x, [1.0, -1.0, 2.0, 0.5], [0.0, 1.0, 0.0, -1.0], eps=0.0)
    np.testing.assert_allclose(out, [-1.5 / s, 1 + 0.5 / s, 1.0 / s, 0.75 / s - 1], rtol=1e-15)
    # ε sits inside the square root, added to the variance
    np.testing.assert_allclose(P.layer_norm(x, eps=0.75),  # sqrt(1.25 + 0.75) = √2
                               np.array([-1.5, -0.5, 0.5, 1.5]) / math.sqrt(2.0), rtol=1e-15)
    # rows are independent
    X = np.array([x, [5.0, 5.0, 5.0, 9.0]])
    np.testing.assert_allclose(P.layer_norm(X, eps=0.0)[1],
                               [-1 / math.sqrt(3)] * 3 + [math.sqrt(3)], rtol=1e-14)


def test_rms_norm_known_case():
    # mean(x²) = (9 + 16)/2 = 12.5; no centring, unlike layer_norm
    r = math.sqrt(12.5)
    np.testing.assert_allclose(P.rms_norm([3.0, 4.0], [1.0, 2.0], eps=0.0), [3 / r, 8 / r],
                               rtol=1e-15)
    np.testing.assert_allclose(P.rms_norm([[2.0, 2.0, 2.0, 2.0]], np.ones(4), eps=0.0),
                               [[1.0] * 4], rtol=1e-15)
    # ε is added to mean(x²): sqrt(12.5 + 3.5) = 4
    np.testing.assert_allclose(P.rms_norm([3.0, 4.0], [1.0, 1.0], eps=3.5), [0.75, 1.0],
                               rtol=1e-15)


def test_sinusoidal_table_values():
    Pt = P.sinusoidal_positional_embedding(5, 8)  # [ℓ=5, d_e=8]
    assert Pt.shape == (5, 8)
    np.testing.assert_array_equal(Pt[0], [0, 1, 0, 1, 0, 1, 0, 1])  # t = 0: sin 0, cos 0
    assert Pt[1, 0] == pytest.approx(math.sin(1.0), rel=1e-15)      # i = 0: angle t
    assert Pt[1, 1] == pytest.approx(math.cos(1.0), rel=1e-15)
    # d_e = 8, i = 1: 10000^(2/8) = 10 -> angle t/10
    assert Pt[3, 2] == pytest.approx(math.sin(0.3), rel=1e-14)
    assert Pt[3, 3] == pytest.approx(math.cos(0.3), rel=1e-14)
    # i = 2: 10000^(4/8) = 100 -> angle t/100
    assert Pt[4, 4] == pytest.approx(math.sin(0.04), rel=1e-14)
    assert Pt[4, 5] == pytest.approx(math.cos(0.04), rel=1e-14)
    # i = 3: 10000^(6/8) = 1000
    assert Pt[2, 7] == pytest.approx(math.cos(0.002), rel=1e-14)


def test_embeddings_pick_rows_and_check_ranges():
    W_e = np.arange(12.0).reshape(4, 3)  # [N_V=4, d_e=3]
    np.testing.assert_array_equal(P.token_embedding(W_e, [2, 0, 2]),
                                  [[6, 7, 8], [0, 1, 2], [6, 7, 8]])
    with pytest.raises(ValueError):
        P.token_embedding(W_e, [4])
    with pytest.raises(ValueError):
        P.token_embedding(W_e, [-1])
    W_p = np.arange(6.0).reshape(3, 2)  # [l_max=3, d_e=2]; position 0 is row 0
    np.testing.assert_array_equal(P.learned_positional_embedding(W_p, 2), [[0, 1], [2, 3]])
    with pytest.raises(ValueError):
        P.learned_positional_embedding(W_p, 4)


def test_masks():
    M = P.causal_mask(4)
    np.testing.assert_array_equal(M, [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
    assert not M[np.triu_indices(4, 1)].any()   # zeros above the diagonal
    assert P.bidirectional_mask(3).all() and P.cross_mask(2, 5).shape == (2, 5)


def _rand_attn(d_x, d_z, d_attn, d_out):
    return (rng.standard_normal((d_x, d_attn)), rng.standard_normal(d_attn),
            rng.standard_normal((d_z, d_attn)), rng.standard_normal(d_attn),
            rng.standard_normal((d_z, d_out)), rng.standard_normal(d_out))


def test_attention_hand_case_scale():
    # scores q·k = [2, 0] scaled by 1/sqrt(d_attn=4) -> [1, 0] -> weights e/(e+1), 1/(e+1)
    I = np.eye(4)
    X = np.array([[1.0, 0, 0, 0]])
    Z = np.array([[2.0, 0, 0, 0], [0, 0, 0, 0]])
    out = P.attention(X, Z, I, None, I, None, I, None, P.cross_mask(1, 2))
    a = math.e / (math.e + 1)
    np.testing.assert_allclose(out, [[2 * a, 0, 0, 0]], rtol=1e-15)


def test_attention_with_one_key_returns_its_value():
    Wq, bq, Wk, bk, Wv, bv = _rand_attn(5, 3, 4, 6)
    X, Z = rng.standard_normal((7, 5)), rng.standard_normal((1, 3))
    out = P.attention(X, Z, Wq, bq, Wk, bk, Wv, bv, P.cross_mask(7, 1))
    np.testing.assert_allclose(out, np.repeat(Z @ Wv + bv, 7, axis=0), rtol=1e-13)


def test_attention_masks_average_values():
    # W_q = 0 makes every score equal, so each query averages the values it may see
    d = 3
    Wq, Wk, Wv = np.zeros((d, 2)), rng.standard_normal((d, 2)), np.eye(d)
    X = rng.standard_normal((4, d))
    bi = P.attention(X, X, Wq, None, Wk, None, Wv, None, P.bidirectional_mask(4))
    np.testing.assert_allclose(bi, np.repeat(X.mean(0, keepdims=True), 4, axis=0), rtol=1e-13)
    ca = P.attention(X, X, Wq, None, Wk, None, Wv, None, P.causal_mask(4))
    want = np.cumsum(X, axis=0) / np.arange(1, 5)[:, None]  # row t = mean of rows 0..t
    np.testing.assert_allclose(ca, want, rtol=1e-13)


def test_causal_attention_ignores_future_tokens():
    Wq, bq, Wk, bk, Wv, bv = _rand_attn(4, 4, 3, 4)
    X = rng.standard_normal((5, 4))
    Y = X.copy()
    Y[3:] = rng.standard_normal((2, 4))  # change tokens 3 and 4
    f = lambda A: P.attention(A, A, Wq, bq, Wk, bk, Wv, bv, P.causal_mask(5))  # noqa: E731
    np.testing.assert_array_equal(f(X)[:3], f(Y)[:3])
    assert np.abs(f(X)[3:] - f(Y)[3:]).min() > 0


def test_single_query_attention_matches_general_attention():
    Wq, bq, Wk, bk, Wv, bv = _rand_attn(5, 3, 4, 6)
    X, Z = rng.standard_normal((4, 5)), rng.standard_normal((6, 3))
    full = P.attention(X, Z, Wq, bq, Wk, bk, Wv, bv, P.cross_mask(4, 6))
    for t in range(4):
        np.testing.assert_allclose(P.single_query_attention(X[t], Z, Wq, bq, Wk, bk, Wv, bv),
                                   full[t], rtol=1e-12)


def test_mha_with_one_head_equals_attention():
    Wq, bq, Wk, bk, Wv, bv = _rand_attn(4, 4, 4, 4)
    X = rng.standard_normal((3, 4))
    mask = P.causal_mask(3)
    att = P.attention(X, X, Wq, bq, Wk, bk, Wv, bv, mask)
    heads = [(Wq, bq, Wk, bk, Wv, bv)]
    np.testing.assert_allclose(P.mh_attention(X, X, heads, np.eye(4), None, mask), att,
                               rtol=1e-14)
    Wo, bo = rng.standard_normal((4, 2)), rng.standard_normal(2)
    np.testing.assert_allclose(P.mh_attention(X, X, heads, Wo, bo, mask), att @ Wo + bo,
                               rtol=1e-13)


def test_mha_heads_are_contiguous_column_blocks():
    # H = 2 heads of d_h = 2 cut from [d_e, H·d_h] projections; head h owns columns 2h, 2h+1 and
    # rows 2h, 2h+1 of W_o, so the output is the sum of the per-head contributions
    d, H = 4, 2
    Wq, Wk, Wv = (rng.standard_normal((d, d)) for _ in range(3))
    bq, bk, bv = (rng.standard_normal(d) for _ in range(3))
    Wo = rng.standard_normal((d, d))
    X = rng.standard_normal((5, d))
    mask = P.bidirectional_mask(5)
    got = P.mh_attention(X, X, P.make_heads(H, Wq, bq, Wk, bk, Wv, bv), Wo, None, mask)
    want = sum(P.attention(X, X, Wq[:, c], bq[c], Wk[:, c], bk[c], Wv[:, c], bv[c], mask) @ Wo[c]
               for c in (slice(0, 2), slice(2, 4)))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # and it is not the same as one head over all columns (scale and softmax differ)
    one = P.attention(X, X, Wq, bq, Wk, bk, Wv, bv, mask) @ Wo
    assert np.abs(got - one).max() > 1e-3


def test_mlp_and_unembedding():
    x = np.array([[1.0, -2.0]])
    W1, b1 = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]), np.array([0.0, 0.0, 0.5])
    W2, b2 = np.array([[1.0], [1.0], [2.0]]), np.array([0.25])
    # hidden = [1, -2, -0.5] -> relu [1, 0, 0] -> 1 + 0.25
    np.testing.assert_allclose(P.mlp(x, W1, b1, W2, b2, P.relu), [[1.25]], rtol=1e-15)
    W_e = rng.standard_normal((7, 2))  # tied: logits = x·W_eᵀ, row v scores token v
    np.testing.assert_allclose(P.unembedding(x, W_e.T)[0], [W_e[v] @ x[0] for v in range(7)],
                               rtol=1e-14)


# ---------------------------------------------------------------- Llama pieces

def test_silu_known_points():
    assert P.silu(0.0) == 0.0
    assert P.silu(1.0) == pytest.approx(1.0 / (1.0 + math.exp(-1.0)), rel=1e-15)  # 0.7310585786
    assert P.silu(-2.0) == pytest.approx(-2.0 / (1.0 + math.exp(2.0)), rel=1e-15)
    with np.errstate(over="ignore"):
        assert P.silu(-800.0) == 0.0  # e^800 overflows to inf: x / inf


def test_rotary_rotates_each_pair_by_position_times_frequency():
    # one head of width 4, base 100: θ_0 = p, θ_1 = p / 100^(2/4) = p/10
    X = np.array([[1.0, 2.0, 3.0, 4.0]] * 3)
    for pairing, (a0, b0, a1, b1) in (("adjacent", (0, 1, 2, 3)), ("halves", (0, 2, 1, 3))):
        Y = P.rotary_embedding(X, 1, 100.0, pairing, start=5)
        for t in range(3):
            p = 5 + t
            for (ia, ib), theta in (((a0, b0), p), ((a1, b1), p / 10)):
                a, b = X[t, ia], X[t, ib]
                assert Y[t, ia] == pytest.approx(a * math.cos(theta) - b * math.sin(theta))
                assert Y[t, ib] == pytest.approx(a * math.sin(theta) + b * math.cos(theta))
    # position 0 is the identity
    np.testing.assert_array_equal(P.rotary_embedding(X[:1], 1, 100.0, "halves"), X[:1])


def test_rotary_scores_depend_on_relative_position_only():
    q, k = rng.standard_normal((1, 8)), rng.standard_normal((1, 8))
    for pairing in ("adjacent", "halves"):
        dot = lambda p, s: float((P.rotary_embedding(q, 1, 1e4, pairing, start=p)  # noqa: E731
                                  @ P.rotary_embedding(k, 1, 1e4, pairing, start=s).T)[0, 0])
        assert dot(7, 3) == pytest.approx(dot(104, 100), rel=1e-12)
        assert dot(7, 3) != pytest.approx(dot(7, 4), rel=1e-3)


def test_rotary_adjacent_is_halves_after_llama_cpp_permutation():
    # llama.cpp's converter interleaves each head's halves (new 2i ← old i, new 2i+1 ← old
    # i + d/2); rotating the permuted features with adjacent pairs = permuting halves' result.
    H, d = 3, 8
    X = rng.standard_normal((5, H * d))
    perm = np.concatenate([h * d + np.stack([np.arange(d // 2), np.arange(d // 2, d)], 1).ravel()
                           for h in range(H)])
    np.testing.assert_allclose(P.rotary_embedding(X[:, perm], H, 1e4, "adjacent"),
                               P.rotary_embedding(X, H, 1e4, "halves")[:, perm], rtol=1e-13)


def test_grouped_query_attention_equals_mha_with_repeated_kv():
    H, H_kv, d, d_e, l = 6, 2, 4, 12, 5
    X = rng.standard_normal((l, d_e))
    Wq, Wo = rng.standard_normal((d_e, H * d)), rng.standard_normal((H * d, d_e))
    Wk, Wv = rng.standard_normal((d_e, H_kv * d)), rng.standard_normal((d_e, H_kv * d))
    mask = P.causal_mask(l)
    # repeat each K/V head H/H_kv times, head-major (Hugging Face's repeat_kv)
    rep = lambda W: np.concatenate([W[:, (h // 3) * d:(h // 3 + 1) * d]  # noqa: E731
                                    for h in range(H)], axis=1)
    want = P.mh_attention(X, X, P.make_heads(H, Wq, None, rep(Wk), None, rep(Wv), None), Wo,
                          None, mask)
    got = P.grouped_query_attention(X, Wq, Wk, Wv, Wo, H, H_kv, mask)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError):
        P.grouped_query_attention(X, Wq, Wk, Wv, Wo, H, 4, mask)


def test_float16_kv_store():
    # A float16 KV cache: K and V rounded to float16 (nearest even) before attention reads them.
    np.testing.assert_array_equal(P.float16_values([1.0, 1 + 2**-11, 1 + 3 * 2**-11, -1e-8]),
                                  [1.0, 1.0, 1 + 2**-9, 0.0])
    H, H_kv, d, d_e, l = 4, 2, 4, 8, 6
    X = rng.standard_normal((l, d_e))
    Wq, Wo = rng.standard_normal((d_e, H * d)), rng.standard_normal((H * d, d_e))
    Wk, Wv = rng.standard_normal((d_e, H_kv * d)), rng.standard_normal((d_e, H_kv * d))
    mask = P.causal_mask(l)
    # A small change (float16 keeps 11 significant bits), but a change.
    exact = P.grouped_query_attention(X, Wq, Wk, Wv, Wo, H, H_kv, mask, rope=("adjacent", 1e4))
    half = P.grouped_query_attention(X, Wq, Wk, Wv, Wo, H, H_kv, mask, rope=("adjacent", 1e4),
                                     kv_store=P.float16_values)
    assert 0 < np.max(np.abs(half - exact)) / np.max(np.abs(exact)) < 1e-2
    # The same as handing attention K and V already rounded (GPT-2's per-head path).
    heads = P.make_heads(2, Wq[:, :8], None, Wk, None, Wv, None)
    got = P.mh_attention(X, X, heads, Wo[:8], None, mask, kv_store=P.float16_values)
    rounded = [(q, bq, k, bk, v, bv) for q, bq, k, bk, v, bv in heads]
    K = [P.float16_values(X @ k) for _, _, k, _, _, _ in rounded]
    V = [P.float16_values(X @ v) for _, _, _, _, v, _ in rounded]
    want = np.concatenate([P.softmax(np.where(mask, (X @ q) @ K[i].T / math.sqrt(d), -np.inf),
                                     axis=1) @ V[i] for i, (q, *_) in enumerate(rounded)],
                          axis=1) @ Wo[:8]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_swiglu_mlp_by_hand():
    x = np.array([[1.0, -1.0]])
    Wg, Wu, Wd = np.array([[1.0], [0.0]]), np.array([[2.0], [1.0]]), np.array([[3.0, -1.0]])
    s = 1.0 / (1.0 + math.exp(-1.0))  # silu(1) = σ(1)
    np.testing.assert_allclose(P.swiglu_mlp(x, Wg, Wu, Wd), [[3.0 * s, -s]], rtol=1e-15)


def test_q8_0_rows_by_hand():
    # xfc --q8-gemm-inputs' rounding: blocks of 32, d = max|x|/127, q = round-half-even(x/d).
    d = 2.0 ** -6                              # max 127·d: d exact in float32
    row = np.zeros(64)
    row[:32] = np.linspace(-1.0, 1.0, 32)
    row[31] = 127 * d
    row[5], row[6], row[7] = 1.5 * d, 2.5 * d, -3.5 * d   # ties: to 2, 2, −4
    x = np.stack([row, row * 3])
    y = P.q8_0_rows(x, first_row=1)
    np.testing.assert_array_equal(y[0], row)               # rows before first_row untouched
    np.testing.assert_array_equal(y[1, 32:], 0.0)          # a zero block stays zero
    assert y[1, 31] == 127 * 3 * d
    z = P.q8_0_rows(row[None, :])
    np.testing.assert_array_equal(z[0, 5:8], [2 * d, 2 * d, -4 * d])
    assert np.all(np.abs(z[0, :32] - row[:32]) <= d / 2)
    q = z[0, :32] / d
    np.testing.assert_array_equal(q, np.rint(q))
    assert np.all(np.abs(q) <= 127)
    w = P.q8_0_rows(x)                                     # row ×3: d' = 3d, ties stay ties
    np.testing.assert_array_equal(w[1, 5:8], [6 * d, 6 * d, -12 * d])


def test_gqa_and_swiglu_round_every_projection_input():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 64))
    Wq, Wk, Wv, Wo = (rng.standard_normal(s) for s in ((64, 64), (64, 32), (64, 32), (64, 64)))
    mask = P.causal_mask(3)
    seen = []
    def spy(a):
        seen.append(np.shape(a))
        return P.f64(a)
    P.grouped_query_attention(X, Wq, Wk, Wv, Wo, 4, 2, mask, gemm_input=spy)
    P.swiglu_mlp(X, rng.standard_normal((64, 96)), rng.standard_normal((64, 96)),
                 rng.standard_normal((96, 64)), gemm_input=spy)
    assert seen == [(3, 64), (3, 64), (3, 64), (3, 96)]    # Q/K/V input, O input, MLP in, down in
