"""Alg. 14 DInference and Alg. 15 EDInference: prompting a decoder / an encoder-decoder.

No KV cache: every step runs the whole forward pass again on the sequence so far, which is the
definition a cached implementation must reproduce.
"""
import numpy as np

from primitives import softmax


def next_token(logits_last, temperature, rng):
    # logits_last: [N_V] logits of the last position
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        return int(np.argmax(logits_last))           # greedy; ties go to the lowest id
    p = softmax(np.asarray(logits_last) / temperature)  # [N_V]; q ∝ p^(1/τ)
    # inverse CDF with one uniform draw, so the rule is easy to restate elsewhere
    cdf = np.cumsum(p)                                # [N_V]
    u = rng.random() * cdf[-1]
    return int(min(np.searchsorted(cdf, u, side="right"), len(p) - 1))


def d_inference(forward_fn, prompt, max_new_tokens, temperature=0.0, seed=0, eos=None):
    """Alg. 14. forward_fn(tokens) -> logits [ℓ, N_V]. Returns the new tokens only; stops after
    max_new_tokens or right after emitting eos (which is included)."""
    if len(prompt) == 0:
        raise ValueError("DInference needs a non-empty prompt")
    rng = np.random.default_rng(seed)
    x, new = list(prompt), []
    for _ in range(max_new_tokens):
        y = next_token(forward_fn(x)[-1], temperature, rng)  # P[:, ℓ+i-1] in the paper
        x.append(y)
        new.append(y)
        if eos is not None and y == eos:
            break
    return new


def ed_inference(forward_fn, source, prefix, max_new_tokens, temperature=0.0, seed=0, eos=None):
    """Alg. 15. forward_fn(source, target) -> logits [ℓ_x, N_V]. The target starts as `prefix`
    (the paper's [bos]); returns the new tokens only, stopping after eos or max_new_tokens."""
    return d_inference(lambda x: forward_fn(source, x), prefix, max_new_tokens,
                       temperature, seed, eos)
