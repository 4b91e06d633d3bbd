"""The runtime's tokenizers through the library (a WordPiece vocabulary made here)."""
from __future__ import annotations

import pytest

import xf

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "##s", "!"]


def test_wordpiece_round_trip(gpt2, tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    tok = xf.Tokenizer(gpt2.library, tmp_path)
    assert tok.vocab_size == len(VOCAB) and tok.end_of_text == 3
    ids = tok.encode("Hello worlds!")
    assert ids == [2, 4, 5, 6, 7, 3]
    assert tok.decode(ids) == "hello worlds!"
    assert tok.decode([]) == ""
    with pytest.raises(xf.InvalidArgumentError):
        tok.decode([99])


def test_model_tokenizer_and_text_generation(gpt2, tmp_path):
    # A vocabulary as large as the model's (300), so every id it generates decodes.
    vocab = VOCAB[:4] + [f"w{i}" for i in range(4, 300)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    with xf.load(gpt2.library, random_seed=1, tokenizer=tmp_path / "vocab.txt") as model:
        assert model.tokenizer.encode("w10 w20") == [2, 10, 20, 3]
        text = model.generate("w10 w20", max_new_tokens=6)
        # A text prompt stops at the tokenizer's end of text ([SEP] = 3), as the executables do.
        ids = model.generate([2, 10, 20, 3], max_new_tokens=6, eos=3)
        assert isinstance(text, str) and text == model.tokenizer.decode(ids)


def test_missing_tokenizer(gpt2, tmp_path):
    with pytest.raises(xf.LoadError, match="holds neither"):
        xf.Tokenizer(gpt2.library, tmp_path)
