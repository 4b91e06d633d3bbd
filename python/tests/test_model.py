"""A compiled model from Python against the executable xfc builds from the same spec, on the
same random weights (--random-weights 1 / random_seed=1)."""
from __future__ import annotations

import numpy as np
import pytest

import xf

PROMPT = [3, 17, 42, 7, 199]


def test_manifest_and_version(gpt2_model):
    assert xf.API_VERSION == 1
    assert gpt2_model.vocab == 300 and gpt2_model.d_out == 300
    assert gpt2_model.output == "logits" and gpt2_model.manifest["cached"] is True


def test_forward_equals_executable(gpt2, gpt2_model):
    out = gpt2.workdir / "logits.npy"
    gpt2.run("--random-weights", "1", "--tokens", ",".join(map(str, PROMPT)),
             "--logits-out", str(out))
    logits = gpt2_model.forward(PROMPT)
    assert logits.shape == (len(PROMPT), 300) and logits.dtype == np.float32
    np.testing.assert_array_equal(logits, np.load(out))


def test_decode_equals_executable_decode_steps(gpt2, gpt2_model):
    out = gpt2.workdir / "steps.npy"
    gpt2.run("--random-weights", "1", "--tokens", ",".join(map(str, PROMPT)), "--decode-steps",
             "--logits-out", str(out))
    rows = np.stack([gpt2_model.decode([t], start=i) for i, t in enumerate(PROMPT)])
    np.testing.assert_array_equal(rows, np.load(out))


def test_generate_equals_executable_greedy_ids(gpt2, gpt2_model):
    done = gpt2.run("--random-weights", "1", "--tokens", ",".join(map(str, PROMPT)),
                    "--max-new-tokens", "12", "--temperature", "0")
    expected = [int(t) for t in done.stdout.splitlines()[0].split(",")]
    assert len(expected) == 12
    assert gpt2_model.generate(PROMPT, max_new_tokens=12) == expected
    # Re-running the prefix (no KV cache) picks the same ids.
    assert gpt2_model.generate(PROMPT, max_new_tokens=12, use_cache=False) == expected


def test_sampling_follows_the_seed(gpt2, gpt2_model):
    done = gpt2.run("--random-weights", "1", "--tokens", ",".join(map(str, PROMPT)),
                    "--max-new-tokens", "10", "--temperature", "1.5", "--seed", "7")
    expected = [int(t) for t in done.stdout.splitlines()[0].split(",")]
    assert gpt2_model.generate(PROMPT, 10, temperature=1.5, seed=7) == expected


def test_embed_equals_executable(minilm, minilm_model):
    ids = [5, 9, 77, 150, 3]
    out = minilm.workdir / "e.npy"
    minilm.run("--random-weights", "1", "--tokens", ",".join(map(str, ids)), "--embeddings-out",
               str(out), "--pool", "mean", "--normalize")
    embedding = minilm_model.embed(ids, pooling="mean", normalize=True)
    np.testing.assert_array_equal(embedding, np.load(out)[0])
    assert abs(float(np.linalg.norm(embedding)) - 1) < 1e-5


def test_weights_from_a_file(gpt2, gpt2_model):
    path = gpt2.workdir / "w.safetensors"
    gpt2.run("--random-weights", "1", "--save-weights", str(path))
    with xf.load(gpt2.library, path) as model:
        np.testing.assert_array_equal(model.forward(PROMPT), gpt2_model.forward(PROMPT))


class DLPackOnly:
    """A CPU tensor of another library: only the DLPack protocol."""

    def __init__(self, array, device=(1, 0)):
        self._array, self._device = array, device

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device


def test_dlpack_in_and_out(gpt2_model):
    ids = np.array(PROMPT, dtype=np.int64)
    logits = gpt2_model.forward(DLPackOnly(ids))
    np.testing.assert_array_equal(logits, gpt2_model.forward(PROMPT))
    shared = np.from_dlpack(logits)  # what torch.from_dlpack does with the result
    assert shared.__array_interface__["data"][0] == logits.__array_interface__["data"][0]


def test_cuda_tensor_refused(gpt2_model):
    with pytest.raises(xf.InvalidArgumentError, match=r"CUDA device \(0\): xf's C API takes token ids in CPU memory"):
        gpt2_model.forward(DLPackOnly(np.array(PROMPT, dtype=np.int32), device=(2, 0)))


def test_compile_spec_text_to_the_cache(gpt2_model, tmp_path, monkeypatch):
    from conftest import GPT2, ROOT
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    text = (ROOT / "examples" / "gpt2.xf").read_text()
    library = xf.compile(text, defines=GPT2)  # sent on stdin, named by its digest
    assert library.parent == tmp_path / "xf" / "libraries" and library.name.startswith("libspec-")
    assert xf.compile(text, defines=GPT2) == library
    assert xf.compile(text, defines={**GPT2, "L": 1}) != library
    with xf.load(library, random_seed=1) as model:
        np.testing.assert_array_equal(model.forward(PROMPT), gpt2_model.forward(PROMPT))
