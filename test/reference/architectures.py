"""The five architectures of docs/checkpoints.md, built only from primitives.py.

Each forward takes W (a dict name -> float64 array, names as stored in the checkpoint), the
hyperparameters hp, and token ids, and returns logits [ℓ, N_V] (decoders) or hidden states
[ℓ, d_e] (encoders). Weights stored in nn.Linear layout [d_out, d_in] are transposed here, so
every primitive sees x·W with W [d_in, d_out].
"""
import numpy as np

from primitives import (bidirectional_mask, causal_mask, cross_mask, f64, float16_values,
                        gelu_erf, gelu_tanh,
                        grouped_query_attention, layer_norm, learned_positional_embedding,
                        linear, make_heads, mh_attention, mlp, q8_0_rows, relu, rms_norm,
                        sinusoidal_positional_embedding, swiglu_mlp, token_embedding,
                        unembedding)


def _nn_linear(W, prefix, bias=True):
    # nn.Linear stores [d_out, d_in]; return ([d_in, d_out], [d_out] or None)
    return W[prefix + ".weight"].T, (W[prefix + ".bias"] if bias else None)


def _nn_mha(W, prefix, H, X, Z, mask, bias=True, kv_store=f64):
    # MHA whose q/k/v/o are nn.Linear layers {prefix}.{q,k,v,o}; heads contiguous in d_out
    Wq, bq = _nn_linear(W, prefix + ".q", bias)
    Wk, bk = _nn_linear(W, prefix + ".k", bias)
    Wv, bv = _nn_linear(W, prefix + ".v", bias)
    Wo, bo = _nn_linear(W, prefix + ".o", bias)
    return mh_attention(X, Z, make_heads(H, Wq, bq, Wk, bk, Wv, bv), Wo, bo, mask, kv_store)


# ---------------------------------------------------------------- Alg. 10: GPT-2 (pre-LN)

def gpt2_forward(W, hp, tokens, kv_store=f64):
    l_x, d = len(tokens), hp["d_e"]
    x = token_embedding(W["wte.weight"], tokens) \
        + learned_positional_embedding(W["wpe.weight"], l_x)            # [ℓ, d_e]
    mask = causal_mask(l_x)                                               # [ℓ, ℓ]
    for l in range(hp["L"]):
        p = f"h.{l}."
        a = layer_norm(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"], hp["eps"])   # [ℓ, d_e]
        Wqkv, bqkv = W[p + "attn.c_attn.weight"], W[p + "attn.c_attn.bias"]     # [d_e, 3·d_e]
        heads = make_heads(hp["H"], Wqkv[:, :d], bqkv[:d], Wqkv[:, d:2 * d], bqkv[d:2 * d],
                           Wqkv[:, 2 * d:], bqkv[2 * d:])
        x = x + mh_attention(a, a, heads, W[p + "attn.c_proj.weight"],
                             W[p + "attn.c_proj.bias"], mask, kv_store)          # [ℓ, d_e]
        a = layer_norm(x, W[p + "ln_2.weight"], W[p + "ln_2.bias"], hp["eps"])
        x = x + mlp(a, W[p + "mlp.c_fc.weight"], W[p + "mlp.c_fc.bias"],
                    W[p + "mlp.c_proj.weight"], W[p + "mlp.c_proj.bias"], gelu_tanh)
    x = layer_norm(x, W["ln_f.weight"], W["ln_f.bias"], hp["eps"])             # [ℓ, d_e]
    return unembedding(x, W["wte.weight"].T)                                    # [ℓ, N_V] tied


# ---------------------------------------------------------------- Alg. 9: BERT / MiniLM (post-LN)

def bert_forward(W, hp, tokens, prefix=""):
    # as HF BertModel with attention_mask all ones and token_type_ids all zero, in eval mode
    l_x, eps = len(tokens), hp["eps"]
    e = prefix + "embeddings."
    x = token_embedding(W[e + "word_embeddings.weight"], tokens) \
        + learned_positional_embedding(W[e + "position_embeddings.weight"], l_x) \
        + W[e + "token_type_embeddings.weight"][0]                                # [ℓ, d_e]
    x = layer_norm(x, W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"], eps)
    mask = bidirectional_mask(l_x)
    for l in range(hp["L"]):
        p = f"{prefix}encoder.layer.{l}."
        Wq, bq = _nn_linear(W, p + "attention.self.query")
        Wk, bk = _nn_linear(W, p + "attention.self.key")
        Wv, bv = _nn_linear(W, p + "attention.self.value")
        Wo, bo = _nn_linear(W, p + "attention.output.dense")
        a = mh_attention(x, x, make_heads(hp["H"], Wq, bq, Wk, bk, Wv, bv), Wo, bo, mask)
        x = layer_norm(x + a, W[p + "attention.output.LayerNorm.weight"],
                       W[p + "attention.output.LayerNorm.bias"], eps)            # [ℓ, d_e]
        W1, b1 = _nn_linear(W, p + "intermediate.dense")                          # [d_e, d_mlp]
        W2, b2 = _nn_linear(W, p + "output.dense")                                # [d_mlp, d_e]
        x = layer_norm(x + mlp(x, W1, b1, W2, b2, gelu_erf),
                       W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    return x                                                                       # [ℓ, d_e]


def bert_mlm_forward(W, hp, tokens):
    # Alg. 9 in full, as HF BertForMaskedLM without its logits bias: the encoder, then
    # X ← layer_norm(GELU(X·W_f + b_f) | γ, β) and logits X·W_eᵀ (tied)
    x = bert_forward(W, hp, tokens, prefix="bert.")
    h = "cls.predictions.transform."
    Wf, bf = _nn_linear(W, h + "dense")
    x = layer_norm(gelu_erf(linear(x, Wf, bf)), W[h + "LayerNorm.weight"],
                   W[h + "LayerNorm.bias"], hp["eps"])
    return unembedding(x, W["bert.embeddings.word_embeddings.weight"].T)         # [ℓ, N_V]


# ---------------------------------------------------------------- seed 000 (post-LN, no γ/β)

def compact_forward(W, hp, tokens):
    l_x, eps = len(tokens), hp["eps"]
    x = token_embedding(W["tok_emb.weight"], tokens) \
        + learned_positional_embedding(W["pos_emb.weight"], l_x)                 # [ℓ, d_e]
    mask = bidirectional_mask(l_x)
    for l in range(hp["L"]):
        p = f"layers.{l}."
        heads = [(W[p + f"attn.{h}.w_q"], None, W[p + f"attn.{h}.w_k"], None,
                  W[p + f"attn.{h}.w_v"], None) for h in range(hp["H"])]
        # Σ_h Y_h·W_o,hᵀ equals concat_h(Y_h) · [W_o,0ᵀ; …; W_o,H-1ᵀ]
        Wo = np.concatenate([W[p + f"attn.{h}.w_o"].T for h in range(hp["H"])], axis=0)
        y = layer_norm(x + mh_attention(x, x, heads, Wo, None, mask), eps=eps)   # [ℓ, d_e]
        # column form W2·relu(W1·z + b1) + b2 is row form relu(z·W1ᵀ + b1)·W2ᵀ + b2
        f = mlp(y, W[p + "ffn.w1"].T, W[p + "ffn.b1"], W[p + "ffn.w2"].T, W[p + "ffn.b2"], relu)
        x = layer_norm(y + f, eps=eps)                                           # [ℓ, d_e]
    return unembedding(x, W["unembed.weight"])                                   # [ℓ, N_V]


# ---------------------------------------------------------------- Alg. 8: encoder-decoder

def transformer_forward(W, hp, tokens, source_tokens):
    # tokens: target prefix x [ℓ_x]; source_tokens: z [ℓ_z]; -> logits [ℓ_x, N_V]
    if len(source_tokens) == 0:
        raise ValueError("transformer needs at least one source token (--source-tokens)")
    H, eps, d = hp["H"], hp["eps"], hp["d_e"]

    def ln(v, prefix):
        return layer_norm(v, W[prefix + ".weight"], W[prefix + ".bias"], eps)

    def ffn(v, prefix):
        W1, b1 = _nn_linear(W, prefix + ".fc1")
        W2, b2 = _nn_linear(W, prefix + ".fc2")
        return mlp(v, W1, b1, W2, b2, relu)

    l_z, l_x = len(source_tokens), len(tokens)
    Z = token_embedding(W["embed.weight"], source_tokens) \
        + sinusoidal_positional_embedding(l_z, d)                                # [ℓ_z, d_e]
    for l in range(hp["L_enc"]):
        p = f"encoder.layers.{l}."
        Z = ln(Z + _nn_mha(W, p + "attn", H, Z, Z, bidirectional_mask(l_z)), p + "ln1")
        Z = ln(Z + ffn(Z, p + "mlp"), p + "ln2")
    X = token_embedding(W["embed.weight"], tokens) \
        + sinusoidal_positional_embedding(l_x, d)                                # [ℓ_x, d_e]
    for l in range(hp["L_dec"]):
        p = f"decoder.layers.{l}."
        X = ln(X + _nn_mha(W, p + "self_attn", H, X, X, causal_mask(l_x)), p + "ln1")
        X = ln(X + _nn_mha(W, p + "cross_attn", H, X, Z, cross_mask(l_x, l_z)), p + "ln2")
        X = ln(X + ffn(X, p + "mlp"), p + "ln3")
    return unembedding(X, W["unembed.weight"].T)                                 # [ℓ_x, N_V]


# ---------------------------------------------------------------- Gopher-style (RMSNorm, pre-LN)

def gopher_forward(W, hp, tokens, kv_store=f64):
    l_x, eps = len(tokens), hp["eps"]
    x = token_embedding(W["embed.weight"], tokens) \
        + learned_positional_embedding(W["pos_embed.weight"], l_x)              # [ℓ, d_e]
    mask = causal_mask(l_x)
    for l in range(hp["L"]):
        p = f"layers.{l}."
        a = rms_norm(x, W[p + "norm1.weight"], eps)
        x = x + _nn_mha(W, p + "attn", hp["H"], a, a, mask, bias=False, kv_store=kv_store)
        a = rms_norm(x, W[p + "norm2.weight"], eps)
        x = x + mlp(a, W[p + "mlp.fc1.weight"].T, None, W[p + "mlp.fc2.weight"].T, None,
                    gelu_tanh)
    x = rms_norm(x, W["final_norm.weight"], eps)
    return unembedding(x, W["embed.weight"].T)                                  # [ℓ, N_V] tied


# ---------------------------------------------------------------- Llama (RoPE, GQA, SwiGLU)

# Tensor names of the two checkpoint layouts: GGUF (llama.cpp) and Hugging Face LlamaForCausalLM.
# GGUF's converter permutes the rows of attn_q / attn_k within each head so that rotary pairs
# are adjacent; Hugging Face keeps the halves pairing. nn.Linear layout [d_out, d_in] in both.
LLAMA_NAMES = {
    "llama": dict(embed="token_embd.weight", layer="blk.{l}.", attn_norm="attn_norm.weight",
                  q="attn_q.weight", k="attn_k.weight", v="attn_v.weight",
                  o="attn_output.weight", ffn_norm="ffn_norm.weight", gate="ffn_gate.weight",
                  up="ffn_up.weight", down="ffn_down.weight", norm="output_norm.weight",
                  pairing="adjacent"),
    "llama_hf": dict(embed="model.embed_tokens.weight", layer="model.layers.{l}.",
                     attn_norm="input_layernorm.weight", q="self_attn.q_proj.weight",
                     k="self_attn.k_proj.weight", v="self_attn.v_proj.weight",
                     o="self_attn.o_proj.weight", ffn_norm="post_attention_layernorm.weight",
                     gate="mlp.gate_proj.weight", up="mlp.up_proj.weight",
                     down="mlp.down_proj.weight", norm="model.norm.weight", pairing="halves"),
}


def llama_forward(W, hp, tokens, arch="llama", q8_from=None, kv_store=f64):
    # pre-RMSNorm decoder without positional table or biases; tied unembedding.
    # q8_from: the inputs of every projection and of the unembedding are rounded to Q8_0 in
    # rows ≥ q8_from (xfc --q8-gemm-inputs: the rows its decode steps computed).
    n = LLAMA_NAMES[arch]
    gemm_input = f64 if q8_from is None else (lambda a: q8_0_rows(a, q8_from))
    l_x, eps = len(tokens), hp["eps"]
    if l_x > hp["l_max"]:
        raise ValueError(f"sequence length {l_x} exceeds l_max={hp['l_max']}")
    x = token_embedding(W[n["embed"]], tokens)                                   # [ℓ, d_e]
    mask = causal_mask(l_x)
    for l in range(hp["L"]):
        p = n["layer"].format(l=l)
        a = rms_norm(x, W[p + n["attn_norm"]], eps)
        x = x + grouped_query_attention(a, W[p + n["q"]].T, W[p + n["k"]].T, W[p + n["v"]].T,
                                        W[p + n["o"]].T, hp["H"], hp["H_kv"], mask,
                                        rope=(n["pairing"], hp["theta"]),
                                        gemm_input=gemm_input, kv_store=kv_store)
        a = rms_norm(x, W[p + n["ffn_norm"]], eps)
        x = x + swiglu_mlp(a, W[p + n["gate"]].T, W[p + n["up"]].T, W[p + n["down"]].T,
                           gemm_input)
    x = rms_norm(x, W[n["norm"]], eps)
    return unembedding(gemm_input(x), W[n["embed"]].T)                          # [ℓ, N_V] tied


# The decoders whose keys and values can be kept in float16 (kv_float16: xfc
# --kv-cache-type=f16's cache, every K and V rounded to float16 before attention reads it).
KV_FLOAT16_ARCHS = ("gpt2", "gopher", "llama", "llama_hf")


def forward(arch, W, hp, tokens, source_tokens=None, q8_from=None, kv_float16=False):
    """Dispatch: logits [ℓ, N_V] for decoders and bert_mlm, hidden states [ℓ, d_e] for
    bert/minilm."""
    if len(tokens) == 0:
        raise ValueError("need at least one token")
    if kv_float16:
        if arch not in KV_FLOAT16_ARCHS:
            raise ValueError(f"a float16 KV cache is modelled for {', '.join(KV_FLOAT16_ARCHS)}, "
                             f"not {arch}")
        if arch in ("gpt2", "gopher"):
            return {"gpt2": gpt2_forward, "gopher": gopher_forward}[arch](W, hp, tokens,
                                                                         float16_values)
        return llama_forward(W, hp, tokens, arch, q8_from, float16_values)
    if q8_from is not None:
        if arch not in ("llama", "llama_hf"):
            raise ValueError(f"Q8 GEMM inputs are modelled for llama and llama_hf, not {arch}")
        return llama_forward(W, hp, tokens, arch, q8_from)
    if arch == "transformer":
        return transformer_forward(W, hp, tokens, source_tokens if source_tokens is not None
                                   else [])
    if source_tokens is not None:
        raise ValueError(f"{arch} takes no source tokens")
    fn = {"gpt2": gpt2_forward, "bert": bert_forward, "minilm": bert_forward,
          "bert_mlm": bert_mlm_forward,
          "compact": compact_forward, "gopher": gopher_forward,
          "llama": llama_forward,
          "llama_hf": lambda W, hp, t: llama_forward(W, hp, t, "llama_hf")}[arch]
    return fn(W, hp, tokens)
