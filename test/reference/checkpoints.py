"""Hyperparameters and checkpoint tensor names/shapes of docs/checkpoints.md, and a random writer.

`tensor_specs(arch, hp)` lists every tensor with its stored shape and what kind of parameter it
is; the oracle checks a weights file against it and `random_checkpoint` fills it.
"""
import numpy as np

DEFAULTS = {
    "gpt2": dict(L=12, H=12, d_e=768, d_mlp=3072, N_V=50257, l_max=1024, eps=1e-5),
    "bert": dict(L=12, H=12, d_e=768, d_mlp=3072, N_V=30522, l_max=512, eps=1e-12),
    "minilm": dict(L=6, H=12, d_e=384, d_mlp=1536, N_V=30522, l_max=512, eps=1e-12),
    # examples/bert-mlm.xf: BERT-base with its masked-token head (Alg. 9 in full)
    "bert_mlm": dict(L=12, H=12, d_e=768, d_mlp=3072, N_V=30522, l_max=512, eps=1e-12),
    "compact": dict(L=2, H=4, d_e=64, d_qk=16, d_vo=16, d_ff=256, N_V=256, l_max=64, eps=1e-5),
    "transformer": dict(L_enc=2, L_dec=2, H=4, d_e=64, d_mlp=256, N_V=256, eps=1e-5),
    "gopher": dict(L=2, H=4, d_e=64, d_mlp=256, N_V=256, l_max=64, eps=1e-5),
    # SmolLM2-135M-Instruct (GGUF names; llama_hf: Hugging Face names, same sizes)
    "llama": dict(L=30, H=9, H_kv=3, d_e=576, d_mlp=1536, N_V=49152, l_max=8192, eps=1e-5,
                  theta=100000.0),
    "llama_hf": dict(L=30, H=9, H_kv=3, d_e=576, d_mlp=1536, N_V=49152, l_max=8192, eps=1e-5,
                     theta=100000.0),
}
FLOAT_HPARAMS = ("eps", "theta")
ARCHS = tuple(DEFAULTS)
# produce logits [ℓ, N_V] (bert_mlm is an encoder, with the masked-token head)
DECODERS = ("gpt2", "compact", "transformer", "gopher", "llama", "llama_hf", "bert_mlm")
ENCODERS = ("bert", "minilm")                              # produce hidden states [ℓ, d_e]


def hparams(arch, overrides=""):
    """Defaults of `arch` updated from 'L=2,d_e=64,...' (a string) or a dict."""
    if arch not in DEFAULTS:
        raise ValueError(f"unknown arch {arch!r}; expected one of {', '.join(ARCHS)}")
    hp = dict(DEFAULTS[arch])
    if isinstance(overrides, str):
        pairs = [p.split("=", 1) for p in overrides.split(",") if p.strip()]
        if any(len(p) != 2 for p in pairs):
            raise ValueError(f"--hparams must look like 'L=2,d_e=64', got {overrides!r}")
        overrides = {k.strip(): v.strip() for k, v in pairs}
    for k, v in overrides.items():
        if k not in hp:
            raise ValueError(f"{arch} has no hyperparameter {k!r}; it has {', '.join(hp)}")
        hp[k] = float(v) if k in FLOAT_HPARAMS else int(v)
        if k not in FLOAT_HPARAMS and hp[k] <= 0:
            raise ValueError(f"hyperparameter {k} must be positive, got {v}")
    if "d_qk" not in hp and hp["d_e"] % hp["H"]:
        raise ValueError(f"d_e={hp['d_e']} is not divisible by H={hp['H']}")
    if "H_kv" in hp and hp["H"] % hp["H_kv"]:
        raise ValueError(f"H_kv={hp['H_kv']} does not divide H={hp['H']}")
    if "theta" in hp and ((hp["d_e"] // hp["H"]) % 2 or not hp["theta"] > 1):
        raise ValueError("rotary positions need an even head width d_e/H and theta > 1")
    if arch == "transformer" and hp["d_e"] % 2:
        raise ValueError("transformer uses sinusoidal positions and needs an even d_e")
    return hp


# A spec entry: name -> (shape, kind, std). kind picks the random init; a matrix's std is
# 1/sqrt(fan_in), fan_in being the length of the dot product it takes part in, so x·W keeps O(1)
# entries when x does. Embedding tables have std 1, except tables tied to the unembedding (and
# the positions added to them), which get 1/sqrt(d_e) so that logits have O(1) spread too.
def _mat(shape, fan_in):
    return (tuple(shape), "matrix", fan_in ** -0.5)


def _vec(n, kind):
    return ((n,), kind, None)


def _emb(shape, std=1.0):
    return (tuple(shape), "embedding", std)


def _ln(s, prefix, d):  # LayerNorm weight/bias pair
    s[prefix + ".weight"] = _vec(d, "gamma")
    s[prefix + ".bias"] = _vec(d, "beta")


def _linear(s, prefix, d_out, d_in, bias=True):  # nn.Linear layout [d_out, d_in]
    s[prefix + ".weight"] = _mat((d_out, d_in), d_in)
    if bias:
        s[prefix + ".bias"] = _vec(d_out, "bias")


def tensor_specs(arch, hp):
    s = {}
    if arch == "gpt2":
        d, m = hp["d_e"], hp["d_mlp"]
        s["wte.weight"] = _emb((hp["N_V"], d), d ** -0.5)  # tied
        s["wpe.weight"] = _emb((hp["l_max"], d), d ** -0.5)
        for l in range(hp["L"]):
            p = f"h.{l}."
            _ln(s, p + "ln_1", d)
            s[p + "attn.c_attn.weight"] = _mat((d, 3 * d), d)  # Conv1D layout [d_in, d_out]
            s[p + "attn.c_attn.bias"] = _vec(3 * d, "bias")
            s[p + "attn.c_proj.weight"] = _mat((d, d), d)
            s[p + "attn.c_proj.bias"] = _vec(d, "bias")
            _ln(s, p + "ln_2", d)
            s[p + "mlp.c_fc.weight"] = _mat((d, m), d)
            s[p + "mlp.c_fc.bias"] = _vec(m, "bias")
            s[p + "mlp.c_proj.weight"] = _mat((m, d), m)
            s[p + "mlp.c_proj.bias"] = _vec(d, "bias")
        _ln(s, "ln_f", d)
    elif arch in ("bert", "minilm", "bert_mlm"):
        d, m = hp["d_e"], hp["d_mlp"]
        b = "bert." if arch == "bert_mlm" else ""
        std = d ** -0.5 if arch == "bert_mlm" else 1.0  # the word table is tied there
        s[b + "embeddings.word_embeddings.weight"] = _emb((hp["N_V"], d), std)
        s[b + "embeddings.position_embeddings.weight"] = _emb((hp["l_max"], d), std)
        s[b + "embeddings.token_type_embeddings.weight"] = _emb((2, d), std)
        _ln(s, b + "embeddings.LayerNorm", d)
        if arch == "bert_mlm":
            _linear(s, "cls.predictions.transform.dense", d, d)
            _ln(s, "cls.predictions.transform.LayerNorm", d)
        for l in range(hp["L"]):
            p = f"{b}encoder.layer.{l}."
            for w in ("query", "key", "value"):
                _linear(s, p + "attention.self." + w, d, d)
            _linear(s, p + "attention.output.dense", d, d)
            _ln(s, p + "attention.output.LayerNorm", d)
            _linear(s, p + "intermediate.dense", m, d)
            _linear(s, p + "output.dense", d, m)
            _ln(s, p + "output.LayerNorm", d)
    elif arch == "compact":
        d, f = hp["d_e"], hp["d_ff"]
        s["tok_emb.weight"] = _emb((hp["N_V"], d))
        s["pos_emb.weight"] = _emb((hp["l_max"], d))
        for l in range(hp["L"]):
            for h in range(hp["H"]):
                p = f"layers.{l}.attn.{h}."
                s[p + "w_q"] = _mat((d, hp["d_qk"]), d)
                s[p + "w_k"] = _mat((d, hp["d_qk"]), d)
                s[p + "w_v"] = _mat((d, hp["d_vo"]), d)
                # used transposed, summed over H heads: each output is a sum of H·d_vo terms
                s[p + "w_o"] = _mat((d, hp["d_vo"]), hp["H"] * hp["d_vo"])
            p = f"layers.{l}.ffn."
            s[p + "w1"] = _mat((f, d), d)
            s[p + "b1"] = _vec(f, "bias")
            s[p + "w2"] = _mat((d, f), f)
            s[p + "b2"] = _vec(d, "bias")
        s["unembed.weight"] = _mat((d, hp["N_V"]), d)
    elif arch == "transformer":
        d, m = hp["d_e"], hp["d_mlp"]
        s["embed.weight"] = _emb((hp["N_V"], d))
        for side, L in (("encoder", hp["L_enc"]), ("decoder", hp["L_dec"])):
            for l in range(L):
                p = f"{side}.layers.{l}."
                attns = ["attn"] if side == "encoder" else ["self_attn", "cross_attn"]
                for a in attns:
                    for w in "qkvo":
                        _linear(s, p + f"{a}.{w}", d, d)
                for n in range(1, len(attns) + 2):
                    _ln(s, p + f"ln{n}", d)
                _linear(s, p + "mlp.fc1", m, d)
                _linear(s, p + "mlp.fc2", d, m)
        s["unembed.weight"] = _mat((hp["N_V"], d), d)
    elif arch == "gopher":
        d, m = hp["d_e"], hp["d_mlp"]
        s["embed.weight"] = _emb((hp["N_V"], d), d ** -0.5)  # tied
        s["pos_embed.weight"] = _emb((hp["l_max"], d), d ** -0.5)
        for l in range(hp["L"]):
            p = f"layers.{l}."
            s[p + "norm1.weight"] = _vec(d, "gamma")
            for w in "qkvo":
                _linear(s, p + f"attn.{w}", d, d, bias=False)
            s[p + "norm2.weight"] = _vec(d, "gamma")
            _linear(s, p + "mlp.fc1", m, d, bias=False)
            _linear(s, p + "mlp.fc2", d, m, bias=False)
        s["final_norm.weight"] = _vec(d, "gamma")
    elif arch in ("llama", "llama_hf"):
        from architectures import LLAMA_NAMES
        n = LLAMA_NAMES[arch]
        d, m = hp["d_e"], hp["d_mlp"]
        kv = d // hp["H"] * hp["H_kv"]  # H_kv·d_k
        s[n["embed"]] = _emb((hp["N_V"], d), d ** -0.5)  # tied
        for l in range(hp["L"]):
            p = n["layer"].format(l=l)
            s[p + n["attn_norm"]] = _vec(d, "gamma")
            s[p + n["q"]] = _mat((d, d), d)      # nn.Linear layout [d_out, d_in]
            s[p + n["k"]] = _mat((kv, d), d)
            s[p + n["v"]] = _mat((kv, d), d)
            s[p + n["o"]] = _mat((d, d), d)
            s[p + n["ffn_norm"]] = _vec(d, "gamma")
            s[p + n["gate"]] = _mat((m, d), d)
            s[p + n["up"]] = _mat((m, d), d)
            s[p + n["down"]] = _mat((d, m), m)
        s[n["norm"]] = _vec(d, "gamma")
    else:
        raise ValueError(f"unknown arch {arch!r}")
    return s


def random_checkpoint(arch, hp, seed):
    """float32 tensors for every name of `arch`, scaled so activations stay O(1):
    matrices and untied unembeddings N(0, 1/fan_in), embedding tables N(0, 1) (N(0, 1/d_e) when
    tied to the unembedding), γ = 1 + 0.1·N(0,1), β and biases 0.1·N(0,1)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, kind, std) in tensor_specs(arch, hp).items():
        z = rng.standard_normal(shape)
        if kind in ("matrix", "embedding"):
            a = std * z
        elif kind == "gamma":
            a = 1.0 + 0.1 * z
        else:  # beta, bias
            a = 0.1 * z
        out[name] = a.astype(np.float32)
    return out


def check_weights(arch, hp, weights):
    """Raises ValueError naming the first missing tensor or wrong shape; extra tensors are
    ignored (HF files carry buffers such as attn.bias or lm_head.weight)."""
    for name, (shape, _, _) in tensor_specs(arch, hp).items():
        if name not in weights:
            raise ValueError(f"weights file has no tensor '{name}' (needed by {arch})")
        if tuple(weights[name].shape) != shape:
            raise ValueError(f"tensor '{name}' has shape {list(weights[name].shape)}, "
                             f"{arch} with these hyperparameters needs {list(shape)}")
