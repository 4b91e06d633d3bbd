"""xf.import_hf: a Hugging Face GPT-2 directory (a config.json and a checkpoint with its own
tensor names, saved here from random weights) through `xfc import`, compiled and run: the
same logits and ids as examples/gpt2.xf on the same weights."""
from __future__ import annotations

import json

import numpy as np
import pytest

import xf

PROMPT = [3, 17, 42, 7, 199]
CONFIG = {"model_type": "gpt2", "architectures": ["GPT2Model"], "n_layer": 2, "n_head": 4,
          "n_embd": 64, "n_inner": 256, "vocab_size": 300, "n_positions": 80,
          "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}


def test_import_compile_load(gpt2, gpt2_model, tmp_path):
    directory = tmp_path / "gpt2-hf"
    directory.mkdir()
    gpt2.run("--random-weights", "1", "--save-weights", str(directory / "model.safetensors"))
    (directory / "config.json").write_text(json.dumps(CONFIG))
    spec = xf.import_hf(directory, tmp_path / "imported.xf")
    assert "# n_layer" in spec.read_text()
    library = xf.compile(spec, output=tmp_path / "libimported.so")
    with xf.load(library, directory / "model.safetensors") as model:
        np.testing.assert_array_equal(model.forward(PROMPT), gpt2_model.forward(PROMPT))
        assert model.generate(PROMPT, 8) == gpt2_model.generate(PROMPT, 8)


def test_import_refusals(tmp_path):
    with pytest.raises(xf.XfError, match="no config.json"):
        xf.import_hf(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gemma2"}))
    with pytest.raises(xf.CompileError, match="model_type 'gemma2' is not supported"):
        xf.import_hf(tmp_path, tmp_path / "model.xf")
