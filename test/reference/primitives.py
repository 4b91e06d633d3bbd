"""The algorithm boxes of Phuong & Hutter, "Formal Algorithms for Transformers", in numpy float64.

Independent numerics oracle for xf: this file shares no code with the compiler and is written
straight from the paper and docs/checkpoints.md.

Convention: the paper stores tokens as columns ([d_e, ℓ]); here activations are row-major,
one row per token position ([ℓ, d_e]), and a linear map is x·W + b with W stored [d_in, d_out].
Architectures that store nn.Linear weights ([d_out, d_in]) transpose them before calling in.
Positions t are 0-based (row t of a positional table belongs to token t).
"""
import math

import numpy as np


def f64(a):
    return np.asarray(a, dtype=np.float64)


def float16_values(a):
    # a rounded to IEEE float16 (to nearest even), as a float16 KV cache holds keys and values
    # (xfc --kv-cache-type=f16), back in float64.
    return f64(a).astype(np.float16).astype(np.float64)


# ---------------------------------------------------------------- Alg. 1, Alg. 2: embeddings

def token_embedding(W_e, tokens):
    # W_e: [N_V, d_e], tokens: [ℓ] ints in [0, N_V) -> [ℓ, d_e]
    tokens = np.asarray(tokens, dtype=np.int64)
    if tokens.ndim != 1 or (tokens.size and (tokens.min() < 0 or tokens.max() >= W_e.shape[0])):
        raise ValueError(f"token ids must be a 1-D list in [0, {W_e.shape[0]})")
    return f64(W_e)[tokens]


def learned_positional_embedding(W_p, length):
    # W_p: [l_max, d_e] -> [ℓ, d_e]; row t is position t (0-based)
    if length > W_p.shape[0]:
        raise ValueError(f"sequence length {length} exceeds l_max={W_p.shape[0]}")
    return f64(W_p)[:length]


def sinusoidal_positional_embedding(length, d_e):
    # -> [ℓ, d_e];  P[t, 2i] = sin(t / 10000^(2i/d_e)),  P[t, 2i+1] = cos(same angle)
    if d_e % 2:
        raise ValueError("sinusoidal positions need an even d_e")
    P = np.zeros((length, d_e))                       # [ℓ, d_e]
    t = np.arange(length, dtype=np.float64)[:, None]  # [ℓ, 1]
    two_i = np.arange(0, d_e, 2, dtype=np.float64)    # [d_e/2] holds 2i
    angle = t / np.power(10000.0, two_i / d_e)        # [ℓ, d_e/2]
    P[:, 0::2] = np.sin(angle)
    P[:, 1::2] = np.cos(angle)
    return P


# ---------------------------------------------------------------- elementwise pieces

def softmax(S, axis=-1):
    # subtract the max so exp never overflows; -inf entries (masked) become exactly 0
    S = f64(S)
    m = np.max(S, axis=axis, keepdims=True)
    e = np.exp(S - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def relu(x):
    return np.maximum(f64(x), 0.0)


_erf = np.vectorize(math.erf, otypes=[np.float64])  # numpy has no erf; math.erf is exact to ~1ulp


def gelu_erf(x):
    # exact GELU, as BERT uses it: 0.5·x·(1 + erf(x/√2))
    x = f64(x)
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    # GPT-2's approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    x = f64(x)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    # SiLU (swish), the gate of SwiGLU: x·σ(x) = x / (1 + e^(−x))
    x = f64(x)
    return x / (1.0 + np.exp(-x))


def linear(x, W, b=None):
    # x: [ℓ, d_in], W: [d_in, d_out], b: [d_out] -> [ℓ, d_out]
    y = f64(x) @ f64(W)
    return y if b is None else y + f64(b)


# ---------------------------------------------------------------- Alg. 6 and RMSNorm

def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    # x: [ℓ, d_e] (or [d_e]); normalises each row; var is the biased variance (divide by d_e)
    x = f64(x)
    m = x.mean(axis=-1, keepdims=True)                    # [ℓ, 1]
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)       # [ℓ, 1]
    y = (x - m) / np.sqrt(v + eps)                        # [ℓ, d_e]
    if gamma is not None:
        y = y * f64(gamma)
    if beta is not None:
        y = y + f64(beta)
    return y


def rms_norm(x, gamma, eps=1e-5):
    # x / sqrt(mean(x²) + ε) · γ — no centring, no β
    x = f64(x)
    ms = (x * x).mean(axis=-1, keepdims=True)             # [ℓ, 1]
    return x / np.sqrt(ms + eps) * f64(gamma)


# ---------------------------------------------------------------- Alg. 3, 4, 5: attention

def single_query_attention(e, e_ctx, W_q, b_q, W_k, b_k, W_v, b_v):
    # Alg. 3.  e: [d_in] current token, e_ctx: [ℓ_z, d_in] context -> ṽ: [d_out]
    q = linear(f64(e)[None, :], W_q, b_q)[0]  # [d_attn]
    k = linear(e_ctx, W_k, b_k)               # [ℓ_z, d_attn]
    v = linear(e_ctx, W_v, b_v)               # [ℓ_z, d_out]
    s = k @ q / math.sqrt(q.shape[0])         # [ℓ_z]
    alpha = np.exp(s - s.max())
    alpha = alpha / alpha.sum()               # [ℓ_z]
    return alpha @ v                          # [d_out]


def bidirectional_mask(l_x):
    return np.ones((l_x, l_x), dtype=bool)    # [ℓ_x, ℓ_x]: every token sees every token


def causal_mask(l_x):
    # [ℓ_x, ℓ_x]; mask[t, t'] = (t' <= t): query t sees keys up to itself, zeros above diagonal
    return np.tril(np.ones((l_x, l_x), dtype=bool))


def cross_mask(l_x, l_z):
    return np.ones((l_x, l_z), dtype=bool)    # [ℓ_x, ℓ_z]: each decoder token sees the encoder's


def attention(X, Z, W_q, b_q, W_k, b_k, W_v, b_v, mask, kv_store=f64):
    # Alg. 4.  X: [ℓ_x, d_x] primary, Z: [ℓ_z, d_z] context, mask: [ℓ_x, ℓ_z] bool
    # W_q: [d_x, d_attn], W_k: [d_z, d_attn], W_v: [d_z, d_out]; biases may be None
    # kv_store: the values K and V are kept as (float16_values for a float16 KV cache)
    Q = linear(X, W_q, b_q)                   # [ℓ_x, d_attn]
    K = kv_store(linear(Z, W_k, b_k))         # [ℓ_z, d_attn]
    V = kv_store(linear(Z, W_v, b_v))         # [ℓ_z, d_out]
    S = Q @ K.T / math.sqrt(Q.shape[1])       # [ℓ_x, ℓ_z]; the paper's S is this transposed
    S = np.where(mask, S, -np.inf)            # masked scores get zero weight after softmax
    A = softmax(S, axis=1)                    # [ℓ_x, ℓ_z]; each query row sums to 1
    return A @ V                              # [ℓ_x, d_out]


def mh_attention(X, Z, heads, W_o, b_o, mask, kv_store=f64):
    # Alg. 5.  heads: list of H tuples (W_q, b_q, W_k, b_k, W_v, b_v), one per head
    # W_o: [H·d_mid, d_out] acting on the heads' outputs concatenated along features
    Y = np.concatenate([attention(X, Z, *hd, mask, kv_store) for hd in heads],
                       axis=1)                                               # [ℓ_x, H·d_mid]
    return linear(Y, W_o, b_o)                                               # [ℓ_x, d_out]


def split_heads(W, b, H):
    # W: [d_in, H·d_h] with heads contiguous along columns -> H pairs ([d_in, d_h], [d_h] or None)
    d_h = W.shape[1] // H
    if d_h * H != W.shape[1]:
        raise ValueError(f"{W.shape[1]} columns do not split into {H} heads")
    return [(W[:, h * d_h:(h + 1) * d_h], None if b is None else b[h * d_h:(h + 1) * d_h])
            for h in range(H)]


def make_heads(H, W_q, b_q, W_k, b_k, W_v, b_v):
    # full projections [d_in, H·d_h] -> list of per-head tuples for mh_attention
    q, k, v = split_heads(W_q, b_q, H), split_heads(W_k, b_k, H), split_heads(W_v, b_v, H)
    return [q[h] + k[h] + v[h] for h in range(H)]


# ---------------------------------------------------------------- Llama: RoPE, grouped-query attention

def rotary_embedding(X, heads, base, pairing, start=0):
    # Su et al.'s rotary positions. X: [ℓ, H·d], head h = columns h·d … (h+1)·d−1, row t at
    # position p = start + t. Pair i of a head (i = 0 … d/2−1) turns by θ_i = p·base^(−2i/d):
    # (a, b) ↦ (a·cos θ_i − b·sin θ_i, a·sin θ_i + b·cos θ_i), the pair being
    # (x[2i], x[2i+1]) for "adjacent" (GGUF) and (x[i], x[i + d/2]) for "halves" (Hugging Face).
    X = f64(X)
    length, width = X.shape
    d = width // heads
    if d * heads != width or d % 2:
        raise ValueError(f"{width} columns do not split into {heads} heads of even width")
    p = start + np.arange(length, dtype=np.float64)[:, None]              # [ℓ, 1]
    theta = p * base ** (-np.arange(0, d, 2, dtype=np.float64) / d)       # [ℓ, d/2]
    cos, sin = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]       # [ℓ, 1, d/2]
    Y = X.reshape(length, heads, d).copy()                                # [ℓ, H, d]
    if pairing == "adjacent":
        first, second = np.arange(0, d, 2), np.arange(1, d, 2)
    elif pairing == "halves":
        first, second = np.arange(d // 2), np.arange(d // 2, d)
    else:
        raise ValueError(f"unknown rotary pairing {pairing!r}")
    a, b = Y[:, :, first].copy(), Y[:, :, second].copy()                  # [ℓ, H, d/2]
    Y[:, :, first] = a * cos - b * sin
    Y[:, :, second] = a * sin + b * cos
    return Y.reshape(length, width)


def grouped_query_attention(X, W_q, W_k, W_v, W_o, heads, kv_heads, mask, rope=None,
                            gemm_input=f64, kv_store=f64):
    # Alg. 5 with H_kv ≤ H key/value heads (Ainslie et al.) and no biases.
    # X: [ℓ, d_e]; W_q: [d_e, H·d], W_k, W_v: [d_e, H_kv·d], W_o: [H·d, d_e]. Query head h
    # uses key/value head h // (H / H_kv). rope = (pairing, base) rotates every head of Q and K
    # at positions 0 … ℓ−1 before the scores. gemm_input: applied to the input of each
    # projection (q8_0_rows for xfc --q8-gemm-inputs). kv_store: the values the rotated K and
    # V are kept as (float16_values for a float16 KV cache).
    if heads % kv_heads:
        raise ValueError(f"kv_heads={kv_heads} does not divide heads={heads}")
    X = gemm_input(X)
    Q, K, V = linear(X, W_q), linear(X, W_k), linear(X, W_v)   # [ℓ, H·d], [ℓ, H_kv·d] ×2
    if rope is not None:
        Q = rotary_embedding(Q, heads, rope[1], rope[0])
        K = rotary_embedding(K, kv_heads, rope[1], rope[0])
    K, V = kv_store(K), kv_store(V)
    d, group = Q.shape[1] // heads, heads // kv_heads
    outputs = []
    for h in range(heads):
        g = h // group
        q, k, v = Q[:, h * d:(h + 1) * d], K[:, g * d:(g + 1) * d], V[:, g * d:(g + 1) * d]
        S = np.where(mask, q @ k.T / np.sqrt(d), -np.inf)     # [ℓ, ℓ]
        outputs.append(softmax(S, axis=1) @ v)                 # [ℓ, d]
    return linear(gemm_input(np.concatenate(outputs, axis=1)), W_o)   # [ℓ, d_e]


def swiglu_mlp(x, W_gate, W_up, W_down, gemm_input=f64):
    # Shazeer's SwiGLU: (silu(x·W_gate) ⊙ (x·W_up))·W_down; W_gate, W_up: [d_e, d_mlp]
    x = gemm_input(x)
    return linear(gemm_input(silu(linear(x, W_gate)) * linear(x, W_up)), W_down)


def q8_0_rows(x, first_row=0):
    # xfc --q8-gemm-inputs (docs/correctness.md, --q8-gemm-inputs): rows ≥ first_row of a
    # GEMM input [ℓ, K] (K a multiple of 32), held as float32, rounded per block of 32 to
    # x̂ = d·q with d = float32(max|x| / 127) and q = round-half-even(x / d) clipped to ±127.
    x = f64(x).copy()
    tail = x[first_row:]
    blocks = tail.astype(np.float32).reshape(-1, 32)
    d = (np.abs(blocks).max(axis=1) / np.float32(127)).astype(np.float32).astype(np.float64)
    q = np.clip(np.rint(blocks / np.where(d > 0, d, 1.0)[:, None]), -127, 127)
    x[first_row:] = (q * d[:, None]).reshape(tail.shape)
    return x


# ---------------------------------------------------------------- MLP and Alg. 7

def mlp(x, W_1, b_1, W_2, b_2, activation):
    # x: [ℓ, d_e], W_1: [d_e, d_mlp], W_2: [d_mlp, d_e] -> [ℓ, d_e]
    return linear(activation(linear(x, W_1, b_1)), W_2, b_2)


def unembedding(x, W_u):
    # Alg. 7 without its final softmax: x: [ℓ, d_e], W_u: [d_e, N_V] -> logits [ℓ, N_V]
    # tied unembedding passes W_u = W_eᵀ
    return f64(x) @ f64(W_u)
