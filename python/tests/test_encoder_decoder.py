"""An encoder-decoder (examples/transformer.xf, Alg. 8 / 15): source ids in forward and
generate, against the executable's --source-tokens."""
from __future__ import annotations

import numpy as np
import pytest

import xf

SOURCE, TARGET = [5, 9, 77, 150, 3, 200], [1, 42, 7]


def test_forward_and_generate_with_a_source(transformer):
    src, tgt = ",".join(map(str, SOURCE)), ",".join(map(str, TARGET))
    out = transformer.workdir / "logits.npy"
    transformer.run("--random-weights", "1", "--source-tokens", src, "--tokens", tgt,
                    "--logits-out", str(out))
    done = transformer.run("--random-weights", "1", "--source-tokens", src, "--tokens", tgt,
                           "--max-new-tokens", "6", "--temperature", "0")
    expected = [int(t) for t in done.stdout.splitlines()[0].split(",")]
    with xf.load(transformer.library, random_seed=1) as model:
        np.testing.assert_array_equal(model.forward(TARGET, source=SOURCE), np.load(out))
        assert model.generate(TARGET, 6, source=SOURCE) == expected
        with pytest.raises(xf.InvalidArgumentError, match="source: expected at least one id"):
            model.forward(TARGET)
        with pytest.raises(xf.InvalidArgumentError, match="source: id 256 at 0"):
            model.generate(TARGET, 2, source=[256])


def test_a_source_for_a_decoder_only_model(gpt2_model):
    with pytest.raises(xf.InvalidArgumentError, match="takes no source ids"):
        gpt2_model.forward([1, 2], source=[3])


def test_threads_out_of_range(gpt2):
    # (A valid count would change the library's pool for every later test of the session.)
    with pytest.raises(xf.InvalidArgumentError, match="300 is outside 0..256"):
        xf.load(gpt2.library, random_seed=1, threads=300)
