"""xf.Tokenizer: the runtime's tokenizers (GPT-2 BPE, BERT WordPiece, GGUF) through a model
library's C API."""
from __future__ import annotations

import ctypes
import os
from typing import Union

import numpy as np

from ._library import Library
from ._tensors import Ids, as_ids


class Tokenizer:
    """Text <-> token ids, exactly as the executables' ``--tokenizer`` does.

    ``path``: a directory holding vocab.json + merges.txt (GPT-2) or vocab.txt (BERT), a
    vocab.txt / vocab.json file, or a .gguf file (its tokenizer metadata).
    """

    def __init__(self, library: Union[Library, str, os.PathLike],
                 path: Union[str, os.PathLike]) -> None:
        self._lib = library if isinstance(library, Library) else Library(library)
        handle = ctypes.c_void_p()
        self._lib.check(self._lib.xf_tokenizer_load(os.fsencode(path), ctypes.byref(handle)))
        self._handle = handle
        self.path = os.fspath(path)

    @property
    def vocab_size(self) -> int:
        """Entries of the vocabulary."""
        return int(self._lib.xf_tokenizer_vocab_size(self._handle))

    @property
    def end_of_text(self) -> int | None:
        """GPT-2's <|endoftext|> or WordPiece's [SEP] id; None when it has none."""
        end = int(self._lib.xf_tokenizer_end_of_text(self._handle))
        return None if end < 0 else end

    @property
    def bos(self) -> int | None:
        """The id put before a text input, as the executables' --text and --prompt do: a GGUF
        file's BOS when its tokenizer.ggml.add_bos_token is true; else None. encode() does not
        add it; Model's text inputs do."""
        bos = int(self._lib.xf_tokenizer_bos(self._handle))
        return None if bos < 0 else bos

    def encode(self, text: str) -> list[int]:
        """The ids of `text` (GPT-2: no special tokens added; WordPiece: [CLS] ... [SEP])."""
        data = text.encode()
        count = ctypes.c_int64()
        capacity = len(data) + 8
        while True:
            ids = np.empty(capacity, dtype=np.int32)
            status = self._lib.xf_tokenizer_encode(
                self._handle, data, len(data),
                ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), capacity,
                ctypes.byref(count))
            if status == 2 and count.value > capacity:  # XF_ERROR_BUFFER_TOO_SMALL
                capacity = count.value
                continue
            self._lib.check(status)
            return ids[: count.value].tolist()

    def decode(self, ids: Ids) -> str:
        """The text of `ids` (invalid UTF-8 bytes, as in a token split mid-character,
        become U+FFFD)."""
        if not hasattr(ids, "__dlpack__") and np.asarray(ids).size == 0:
            return ""
        array = as_ids(ids)
        size = ctypes.c_int64()
        capacity = 16 * array.size + 16
        while True:
            text = ctypes.create_string_buffer(capacity)
            status = self._lib.xf_tokenizer_decode(
                self._handle, array.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), array.size,
                text, capacity, ctypes.byref(size))
            if status == 2 and size.value > capacity:
                capacity = size.value
                continue
            self._lib.check(status)
            return text.raw[: size.value].decode(errors="replace")

    def close(self) -> None:
        """Frees the tokenizer (also done when it is garbage-collected)."""
        if self._handle:
            self._lib.xf_tokenizer_destroy(self._handle)
            self._handle = ctypes.c_void_p()

    def __del__(self) -> None:
        if getattr(self, "_handle", None):
            self.close()
