"""Training in numpy float64: Alg. 13's and Alg. 12's losses, each op's backward, AdamW.

Independent oracle for xf's training (docs/training.md): every backward rule is written here
from its equation, sharing no code with the compiler; test_training.py checks each one against
central finite differences. Conventions as primitives.py: rows are positions, x·W with W
[d_in, d_out], 0-based positions. `*_backward(…, dy)` returns the gradients of the inputs given
dy = ∂loss/∂output.
"""
import math

import numpy as np

from primitives import causal_mask, f64, gelu_tanh, layer_norm, softmax

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


# ---------------------------------------------------------------- loss (Alg. 13)

def next_token_loss(logits, targets):
    # mean over rows t of −log softmax(logits[t])[targets[t]]  (Alg. 13 sums; the mean keeps
    # the learning rate independent of ℓ and of the batch)
    logits = f64(logits)
    m = logits.max(axis=1, keepdims=True)
    logz = m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))
    rows = np.arange(len(targets))
    return float(np.mean(logz - logits[rows, targets]))


def next_token_loss_backward(logits, targets):
    # ∂/∂logits = (softmax(logits) − onehot(targets)) / ℓ
    g = softmax(logits, axis=1)
    g[np.arange(len(targets)), targets] -= 1.0
    return g / len(targets)


# ---------------------------------------------------------------- loss (Alg. 12)

def mask_tokens(tokens, uniforms, p_mask, mask_token):
    # Alg. 12's rule: each input token is replaced by mask_token with probability p_mask
    # (here: where uniforms[t] < p_mask); the masked positions T are the ones to predict
    x = np.asarray(tokens).copy()
    masked = np.asarray(uniforms) < p_mask
    x[masked] = mask_token
    return x, np.flatnonzero(masked)


def masked_token_loss(logits, tokens, masked):
    # mean over t ∈ T of −log softmax(logits[t])[tokens[t]], 0 when T is empty
    # (Alg. 12 sums over T; the mean, as for Alg. 13)
    if len(masked) == 0:
        return 0.0
    logits = f64(logits)[masked]
    m = logits.max(axis=1, keepdims=True)
    logz = m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))
    return float(np.mean(logz - logits[np.arange(len(masked)), np.asarray(tokens)[masked]]))


def masked_token_loss_backward(logits, tokens, masked):
    # ∂/∂logits[t] = (softmax(logits[t]) − onehot(tokens[t])) / |T| for t ∈ T, 0 elsewhere
    g = np.zeros_like(f64(logits))
    if len(masked):
        p = softmax(logits[masked], axis=1)
        p[np.arange(len(masked)), np.asarray(tokens)[masked]] -= 1.0
        g[masked] = p / len(masked)
    return g


# ---------------------------------------------------------------- per-op backward rules

def linear_backward(x, W, dy):
    # y = x·W + b:  dx = dy·Wᵀ,  dW = xᵀ·dy,  db = Σ_t dy[t]
    return dy @ f64(W).T, f64(x).T @ dy, dy.sum(axis=0)


def layer_norm_backward(x, gamma, eps, dy):
    # y = x̂⊙γ + β, x̂ = (x − μ)/σ, σ = √(var + ε), per row of width d:
    #   ĝ = dy⊙γ,  dx = (ĝ − mean(ĝ) − x̂·mean(ĝ⊙x̂)) / σ,  dγ = Σ_t dy⊙x̂,  dβ = Σ_t dy
    x = f64(x)
    mu = x.mean(axis=1, keepdims=True)
    sigma = np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + eps)
    xhat = (x - mu) / sigma
    g = dy * f64(gamma)
    dx = (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True)) / sigma
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def rms_norm_backward(x, gamma, eps, dy):
    # y = x̂⊙γ, x̂ = x/r, r = √(mean(x²) + ε), per row:
    #   ĝ = dy⊙γ,  dx = (ĝ − x̂·mean(ĝ⊙x̂)) / r,  dγ = Σ_t dy⊙x̂
    x = f64(x)
    r = np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    xhat = x / r
    g = dy * f64(gamma)
    return (g - xhat * (g * xhat).mean(axis=1, keepdims=True)) / r, (dy * xhat).sum(axis=0)


def relu_backward(x, dy):
    # dx = dy where x > 0, else 0 (the subgradient 0 at x = 0)
    return dy * (f64(x) > 0)


def silu_backward(x, dy):
    # SiLU(x) = x·σ(x):  SiLU′(x) = σ(x)·(1 + x·(1 − σ(x)))
    x = f64(x)
    s = 1.0 / (1.0 + np.exp(-x))
    return dy * s * (1.0 + x * (1.0 - s))


def gelu_tanh_backward(x, dy):
    # GELU(x) = ½x(1 + tanh u), u = √(2/π)(x + 0.044715x³):
    #   GELU′(x) = ½(1 + tanh u) + ½x(1 − tanh²u)·√(2/π)(1 + 3·0.044715x²)
    x = f64(x)
    t = np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x ** 3))
    d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
    return dy * d


def gelu_erf_backward(x, dy):
    # GELU(x) = x·Φ(x):  GELU′(x) = Φ(x) + x·φ(x), φ the standard normal density
    x = f64(x)
    Phi = 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    phi = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return dy * (Phi + x * phi)


def rotary_backward(dY, heads, base, pairing):
    # the rotation of each pair is orthogonal: dX = R(θ)ᵀ·dY, the rotation by −θ
    #   (a, b) ↦ (a·cos θ + b·sin θ, −a·sin θ + b·cos θ)
    dY = f64(dY)
    length, width = dY.shape
    d = width // heads
    theta = np.arange(length, dtype=np.float64)[:, None] * \
        base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    cos, sin = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    G = dY.reshape(length, heads, d).copy()
    first, second = (np.arange(0, d, 2), np.arange(1, d, 2)) if pairing == "adjacent" \
        else (np.arange(d // 2), np.arange(d // 2, d))
    a, b = G[:, :, first].copy(), G[:, :, second].copy()
    G[:, :, first] = a * cos + b * sin
    G[:, :, second] = -a * sin + b * cos
    return G.reshape(length, width)


def attention_heads(Q, K, V, heads, mask, kv_heads=None):
    # Alg. 4 per head on projected inputs: head h = columns h·d_k … of Q and of the output;
    # key/value head g = h / (H / H_kv) = columns g·d_k … of K and g·d_v … of V
    kv_heads = kv_heads or heads
    dk, dv, group = Q.shape[1] // heads, V.shape[1] // kv_heads, heads // kv_heads
    out = []
    for h in range(heads):
        g = h // group
        q, k, v = Q[:, h * dk:(h + 1) * dk], K[:, g * dk:(g + 1) * dk], V[:, g * dv:(g + 1) * dv]
        S = np.where(mask, q @ k.T / math.sqrt(dk), -np.inf)
        out.append(softmax(S, axis=1) @ v)
    return np.concatenate(out, axis=1)


def attention_heads_backward(Q, K, V, heads, mask, dY, kv_heads=None):
    # per head, P = softmax(s·QKᵀ + mask), s = 1/√d_k:
    #   dV = Pᵀ·dY,  dP = dY·Vᵀ,  dS = P⊙(dP − rowsum(dP⊙P)),  dQ = s·dS·K,  dK = s·dSᵀ·Q
    # a key/value head shared by H / H_kv query heads sums their dK and dV
    kv_heads = kv_heads or heads
    dk, dv, group = Q.shape[1] // heads, V.shape[1] // kv_heads, heads // kv_heads
    dQ, dK, dV = np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)
    for h in range(heads):
        g = h // group
        qs, ks = slice(h * dk, (h + 1) * dk), slice(g * dk, (g + 1) * dk)
        vs, ys = slice(g * dv, (g + 1) * dv), slice(h * dv, (h + 1) * dv)
        q, k, v, dy = Q[:, qs], K[:, ks], V[:, vs], dY[:, ys]
        s = 1.0 / math.sqrt(dk)
        P = softmax(np.where(mask, s * (q @ k.T), -np.inf), axis=1)
        dV[:, vs] += P.T @ dy
        dP = dy @ v.T
        dS = P * (dP - (dP * P).sum(axis=1, keepdims=True))
        dQ[:, qs] = s * dS @ k
        dK[:, ks] += s * dS.T @ q
    return dQ, dK, dV


def token_embedding_backward(n_vocab, tokens, dy):
    # e_t = W_e[x[t]]:  dW_e[v] = Σ_{t: x[t]=v} dy[t]
    dW = np.zeros((n_vocab, dy.shape[1]))
    np.add.at(dW, np.asarray(tokens), dy)
    return dW


def positional_embedding_backward(l_max, dy):
    # p_t = W_p[t]:  dW_p[t] = dy[t] for t < ℓ, 0 below
    dW = np.zeros((l_max, dy.shape[1]))
    dW[:len(dy)] = dy
    return dW


# ---------------------------------------------------------------- GPT-2 (Alg. 10) backward

def gpt2_loss_and_grads(W, hp, tokens, targets):
    """Loss of gpt2_forward's logits against targets and ∂loss/∂W for every tensor of W.

    The forward is Alg. 10 as architectures.gpt2_forward (pre-LN, causal, GELU tanh, tied
    unembedding, c_attn packing Q | K | V), keeping what the backward reads."""
    W = {k: f64(v) for k, v in W.items()}
    d, H, eps, ell = hp["d_e"], hp["H"], hp["eps"], len(tokens)
    mask = causal_mask(ell)
    X = W["wte.weight"][np.asarray(tokens)] + W["wpe.weight"][:ell]
    saved = []
    for l in range(hp["L"]):
        p = f"h.{l}."
        A = layer_norm(X, W[p + "ln_1.weight"], W[p + "ln_1.bias"], eps)
        QKV = A @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]
        Q, K, V = QKV[:, :d], QKV[:, d:2 * d], QKV[:, 2 * d:]
        Y = attention_heads(Q, K, V, H, mask)
        X1 = X + Y @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        B = layer_norm(X1, W[p + "ln_2.weight"], W[p + "ln_2.bias"], eps)
        U = B @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"]
        G = gelu_tanh(U)
        X2 = X1 + G @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
        saved.append((X, A, Q, K, V, Y, X1, B, U, G))
        X = X2
    F = layer_norm(X, W["ln_f.weight"], W["ln_f.bias"], eps)
    logits = F @ W["wte.weight"].T
    loss = next_token_loss(logits, targets)

    g = {k: np.zeros_like(v) for k, v in W.items()}
    dlogits = next_token_loss_backward(logits, targets)
    dF = dlogits @ W["wte.weight"]                   # logits = F·W_eᵀ
    g["wte.weight"] += dlogits.T @ F
    dX, g["ln_f.weight"], g["ln_f.bias"] = layer_norm_backward(X, W["ln_f.weight"], eps, dF)
    for l in reversed(range(hp["L"])):
        p = f"h.{l}."
        X0, A, Q, K, V, Y, X1, B, U, G = saved[l]
        dG, g[p + "mlp.c_proj.weight"], g[p + "mlp.c_proj.bias"] = \
            linear_backward(G, W[p + "mlp.c_proj.weight"], dX)
        dU = gelu_tanh_backward(U, dG)
        dB, g[p + "mlp.c_fc.weight"], g[p + "mlp.c_fc.bias"] = \
            linear_backward(B, W[p + "mlp.c_fc.weight"], dU)
        dX1, g[p + "ln_2.weight"], g[p + "ln_2.bias"] = \
            layer_norm_backward(X1, W[p + "ln_2.weight"], eps, dB)
        dX1 = dX1 + dX                               # residual
        dY, g[p + "attn.c_proj.weight"], g[p + "attn.c_proj.bias"] = \
            linear_backward(Y, W[p + "attn.c_proj.weight"], dX1)
        dQ, dK, dV = attention_heads_backward(Q, K, V, H, mask, dY)
        dQKV = np.concatenate([dQ, dK, dV], axis=1)
        dA, g[p + "attn.c_attn.weight"], g[p + "attn.c_attn.bias"] = \
            linear_backward(A, W[p + "attn.c_attn.weight"], dQKV)
        dX0, g[p + "ln_1.weight"], g[p + "ln_1.bias"] = \
            layer_norm_backward(X0, W[p + "ln_1.weight"], eps, dA)
        dX = dX0 + dX1                               # residual
    g["wte.weight"] += token_embedding_backward(W["wte.weight"].shape[0], tokens, dX)
    g["wpe.weight"] += positional_embedding_backward(W["wpe.weight"].shape[0], dX)
    return loss, g


# ---------------------------------------------------------------- optimizers

def learning_rate(step, lr, warmup, total, min_lr=0.0):
    # step = 0, 1, …: linear warm-up to lr over `warmup` steps, then cosine decay to min_lr
    # at step `total`
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * progress))


def clip_by_global_norm(grads, max_norm):
    # scale every gradient by max_norm / (‖g‖₂ + 1e-6) when the global norm exceeds max_norm
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    if max_norm > 0 and norm > max_norm:
        scale = max_norm / (norm + 1e-6)
        grads = {k: g * scale for k, g in grads.items()}
    return grads, norm


def sgd_step(params, grads, lr):
    # the paper's update θ ← θ − η·∇loss
    return {k: f64(params[k]) - lr * grads[k] for k in params}


def decays(name, value):
    # weight decay on matrices (GEMM weights, embedding tables), not on biases or norm gains
    return np.ndim(value) >= 2


def adamw_step(params, grads, state, step, lr, beta1=0.9, beta2=0.999, eps=1e-8,
               weight_decay=0.0):
    """One AdamW update (Loshchilov & Hutter; torch.optim.AdamW's order), step = 1, 2, …

    θ ← θ − η·λ·θ (decoupled decay, matrices only); m ← β₁m + (1−β₁)g; v ← β₂v + (1−β₂)g²;
    θ ← θ − η·(m/(1−β₁ᵗ)) / (√(v/(1−β₂ᵗ)) + ε).  state: name -> (m, v), updated in place."""
    out = {}
    for k, p in params.items():
        p = f64(p).copy()
        m, v = state.get(k, (np.zeros_like(p), np.zeros_like(p)))
        gk = grads[k]
        if weight_decay and decays(k, p):
            p -= lr * weight_decay * p
        m = beta1 * m + (1 - beta1) * gk
        v = beta2 * v + (1 - beta2) * gk * gk
        mhat = m / (1 - beta1 ** step)
        vhat = v / (1 - beta2 ** step)
        p -= lr * mhat / (np.sqrt(vhat) + eps)
        state[k] = (m, v)
        out[k] = p
    return out
