"""The random writer and the oracle's tensor list against docs/checkpoints.md itself: the
document is parsed here (names, brace patterns, shapes, default hyperparameters), so a drift
between the document and checkpoints.py fails."""
import os
import re

import numpy as np
import pytest

import safetensors_io as st
from checkpoints import ARCHS, DEFAULTS, check_weights, hparams, random_checkpoint

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "checkpoints.md")

# small hyperparameters with distinct values, so a swapped dimension shows up in a shape
SMALL = {
    "gpt2": "L=2,H=2,d_e=8,d_mlp=12,N_V=11,l_max=7",
    "bert": "L=2,H=2,d_e=8,d_mlp=12,N_V=11,l_max=7",
    "minilm": "L=3,H=2,d_e=6,d_mlp=10,N_V=13,l_max=5",
    "bert_mlm": "L=2,H=2,d_e=8,d_mlp=12,N_V=11,l_max=7",
    "compact": "L=2,H=3,d_e=8,d_qk=5,d_vo=6,d_ff=12,N_V=11,l_max=7",
    "transformer": "L_enc=2,L_dec=3,H=2,d_e=8,d_mlp=12,N_V=11",
    "gopher": "L=3,H=2,d_e=8,d_mlp=12,N_V=11,l_max=7",
    "llama": "L=3,H=4,H_kv=2,d_e=8,d_mlp=12,N_V=11,l_max=7",
    "llama_hf": "L=2,H=3,H_kv=1,d_e=12,d_mlp=10,N_V=13,l_max=9",
}


def _sections():
    """{arch: (hyperparameter dict, [code lines])} read from the document."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        title, body = block.split("\n", 1)
        archs = [a.strip() for a in title.split("—")[0].split("/")]
        if not all(re.fullmatch(r"\w+", a) for a in archs):
            continue  # not an architecture's section (e.g. "GGUF files (llama.cpp layout)")
        code = re.findall(r"```\n(.*?)```", body, flags=re.S)
        lines = [ln for c in code for ln in c.splitlines() if ln.strip()]
        for a in archs:
            hp = {}
            for ln in body.splitlines():
                if ln.startswith("hyperparameters:") or ln.startswith(a + ":"):
                    for k, v in re.findall(r"(\w+)=([0-9.e+-]+)", ln):
                        hp[k] = float(v.rstrip(".")) if k == "eps" else int(v)
            out[a] = (hp, lines)
    return out


def _expand(name, hp):
    m = re.search(r"\{([^}]*)\}", name)
    if not m:
        return [name]
    inner = m.group(1)
    if inner == "l":
        side = name.split(".")[0]  # the transformer's encoder/decoder have their own counts
        n = hp["L_enc"] if side == "encoder" and "L_enc" in hp else \
            hp["L_dec"] if side == "decoder" else hp["L"]
        items = [str(i) for i in range(n)]
    elif inner == "h":
        items = [str(i) for i in range(hp["H"])]
    else:
        items = inner.split(",")
    return [x for it in items for x in _expand(name[:m.start()] + it + name[m.end():], hp)]


def _shape(text, hp):
    return tuple(int(eval(d.replace("·", "*"), {"__builtins__": {}}, dict(hp)))
                 for d in text.split(","))


def _documented_tensors(lines, hp):
    want = {}
    pat = re.compile(r"(\S+?)(?:,\s*(\.\w+))?\s+\[([^\]]*)\](?:,\s*(\.\w+)\s*\[([^\]]*)\])?")
    for ln in lines:
        m = pat.match(ln.strip())
        assert m, f"cannot parse checkpoints.md line: {ln!r}"
        name, alt, shape, alt2, shape2 = m.groups()
        entries = [(name, shape)]
        if alt:   # "x.weight, .bias [d]": both share the shape
            entries.append((name.rsplit(".", 1)[0] + alt, shape))
        if alt2:  # "x.weight [a, b], .bias [a]"
            entries.append((name.rsplit(".", 1)[0] + alt2, shape2))
        for n, s in entries:
            for full in _expand(n, hp):
                want[full] = _shape(s, hp)
    return want


def test_document_lists_every_arch_and_defaults_match():
    sec = _sections()
    assert set(sec) == set(ARCHS)
    for a in ARCHS:
        assert sec[a][0] == DEFAULTS[a], a


@pytest.mark.parametrize("arch", ARCHS)
def test_random_writer_produces_exactly_the_documented_tensors(arch, tmp_path):
    hp = hparams(arch, SMALL[arch])
    want = _documented_tensors(_sections()[arch][1], hp)
    p = tmp_path / "w.safetensors"
    st.save(p, random_checkpoint(arch, hp, seed=3))
    got = st.load(p, as_float64=False)
    assert set(got) == set(want), (set(got) ^ set(want))
    for name, shape in want.items():
        assert got[name].shape == shape, name
        assert got[name].dtype == np.float32, name
    check_weights(arch, hp, got)  # the oracle accepts what the writer wrote


@pytest.mark.parametrize("arch", ARCHS)
def test_random_scales(arch):
    hp = hparams(arch, SMALL[arch])
    w = random_checkpoint(arch, hp, seed=5)
    for name, a in w.items():
        assert np.all(np.isfinite(a)) and a.std() > 0, name
        if re.search(r"(LayerNorm|ln_?\w*|norm\d?|final_norm)\.weight$", name):
            # γ = 1 + 0.1·noise
            assert abs(a.mean() - 1) < 0.2 and 0.01 < a.std() < 0.3, name
        elif name.endswith(".bias") or name.endswith(".b1") or name.endswith(".b2"):
            assert np.abs(a).max() < 1.0, name
        else:
            assert np.abs(a).max() < 10.0, name
    # same seed, same weights; another seed, other weights
    w2 = random_checkpoint(arch, hp, seed=5)
    w3 = random_checkpoint(arch, hp, seed=6)
    assert all(np.array_equal(w[k], w2[k]) for k in w)
    assert not all(np.array_equal(w[k], w3[k]) for k in w)


def test_hparams_parsing_and_errors():
    hp = hparams("gpt2", "L=2, H=4, d_e=64,eps=1e-6")
    assert hp["L"] == 2 and hp["d_e"] == 64 and hp["eps"] == 1e-6 and hp["N_V"] == 50257
    for bad in ("Q=3", "L", "d_e=65", "L=0"):
        with pytest.raises(ValueError):
            hparams("gpt2", bad)
    with pytest.raises(ValueError):
        hparams("mamba")


def test_check_weights_names_missing_and_misshapen_tensors():
    hp = hparams("gopher", SMALL["gopher"])
    w = random_checkpoint("gopher", hp, seed=0)
    w["lm_head.weight"] = np.zeros((1, 1), np.float32)  # extra tensors are fine
    check_weights("gopher", hp, w)
    bad = dict(w)
    del bad["layers.2.norm2.weight"]
    with pytest.raises(ValueError, match=r"layers\.2\.norm2\.weight"):
        check_weights("gopher", hp, bad)
    bad = dict(w)
    bad["layers.0.mlp.fc1.weight"] = bad["layers.0.mlp.fc1.weight"].T
    with pytest.raises(ValueError, match=r"layers\.0\.mlp\.fc1\.weight.*\[8, 12\].*\[12, 8\]"):
        check_weights("gopher", hp, bad)
