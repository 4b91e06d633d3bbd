"""xf.load and Model: a session of a model library (xf_session_*)."""
from __future__ import annotations

import ctypes
import os
from typing import Any, Optional, Union

import numpy as np

from ._errors import InvalidArgumentError
from ._library import GenerateOptions, Library
from ._tensors import Ids, as_ids
from ._tokenizer import Tokenizer

_POOLING = {"mean": 0, "cls": 1}
PathLike = Union[str, os.PathLike]


def _i32(array: Optional[np.ndarray]) -> Any:
    return None if array is None else array.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))


def _f32(array: np.ndarray) -> Any:
    return array.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


class Model:
    """A compiled model with its weights loaded and prepared (an xf_session).

    Outputs are numpy float32 arrays; numpy arrays speak DLPack, so
    ``torch.from_dlpack(model.forward(ids))`` shares their memory. Inputs may be lists,
    numpy arrays or CPU tensors of any DLPack library.
    """

    def __init__(self, library: PathLike, weights: Optional[PathLike] = None, *,
                 random_seed: Optional[int] = None, tokenizer: Optional[PathLike] = None,
                 threads: Optional[int] = None, cuda_graphs: Optional[bool] = None) -> None:
        if (weights is None) == (random_seed is None):
            raise InvalidArgumentError("give either weights=PATH or random_seed=SEED")
        self._lib = Library(library)
        self._session = ctypes.c_void_p()
        if threads is not None:
            self._lib.check(self._lib.xf_set_threads(int(threads)))
        if cuda_graphs is not None:
            if not isinstance(cuda_graphs, bool):
                raise InvalidArgumentError(f"cuda_graphs must be True or False, not {cuda_graphs!r}")
            self._lib.check(self._lib.xf_set_cuda_graphs(int(cuda_graphs)))
        if weights is not None:
            status = self._lib.xf_session_create(os.fsencode(weights),
                                                 ctypes.byref(self._session))
        else:
            status = self._lib.xf_session_create_random(int(random_seed),
                                                        ctypes.byref(self._session))
        self._lib.check(status)
        #: The model's manifest (docs/abi.md): vocab, d_out, max_positions, parameters, ...
        self.manifest: dict[str, Any] = self._lib.manifest
        #: The tokenizer given to load(), or None.
        self.tokenizer: Optional[Tokenizer] = (
            Tokenizer(self._lib, tokenizer) if tokenizer is not None else None)

    @property
    def vocab(self) -> int:
        """Token ids must be below this."""
        return int(self.manifest["vocab"])

    @property
    def d_out(self) -> int:
        """Columns of forward's output: the vocabulary (logits) or the width (hidden)."""
        return int(self.manifest["d_out"])

    @property
    def output(self) -> str:
        """"logits" (decoders) or "hidden" (encoders)."""
        return str(self.manifest["output"])

    def _check(self, status: int) -> None:
        self._lib.check_session(status, self._session)

    def forward(self, ids: Ids, source: Optional[Ids] = None) -> np.ndarray:
        """One forward pass: [len(ids), d_out] float32 (logits or hidden states). An
        encoder-decoder also takes its `source` ids."""
        tokens = as_ids(ids)
        src = None if source is None else as_ids(source, "source")
        out = np.empty((tokens.size, self.d_out), dtype=np.float32)
        self._check(self._lib.xf_session_forward(
            self._session, _i32(tokens), tokens.size, _i32(src), 0 if src is None else src.size,
            _f32(out), out.size))
        return out

    def decode(self, ids: Ids, start: int) -> np.ndarray:
        """Cached decoding: `ids` at positions start .. start+len-1 on the session's KV cache
        (start 0 begins a sequence); the newest position's row, [d_out]."""
        tokens = as_ids(ids)
        out = np.empty(self.d_out, dtype=np.float32)
        self._check(self._lib.xf_session_decode(self._session, _i32(tokens), tokens.size,
                                                int(start), _f32(out), out.size))
        return out

    def embed(self, ids: Union[Ids, str], pooling: str = "mean",
              normalize: bool = False) -> np.ndarray:
        """An encoder's sentence embedding, [d_out]: its hidden states pooled ("mean" or
        "cls"), divided by their norm with `normalize`. A str is encoded by the tokenizer
        (after its BOS when it has one, as --text)."""
        if pooling not in _POOLING:
            raise InvalidArgumentError(f"pooling '{pooling}': expected 'mean' or 'cls'")
        tokens = as_ids(self._encode(ids) if isinstance(ids, str) else ids)
        out = np.empty(self.d_out, dtype=np.float32)
        self._check(self._lib.xf_session_embed(self._session, _i32(tokens), tokens.size,
                                               _POOLING[pooling], int(normalize), _f32(out),
                                               out.size))
        return out

    def generate(self, prompt: Union[Ids, str], max_new_tokens: int = 16, *,
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                 eos: Optional[int] = None, use_cache: bool = True,
                 source: Optional[Ids] = None) -> Union[list[int], str]:
        """Extends `prompt` (Alg. 14; greedy at temperature 0) and returns the new ids, or,
        for a str prompt (encoded by the tokenizer, after its BOS if it has one), the new text.
        Generation stops after `eos` (default: the tokenizer's end of text for a str prompt)."""
        text = isinstance(prompt, str)
        tokens = as_ids(self._encode(prompt) if text else prompt, "prompt")
        if eos is None and text and self.tokenizer is not None:
            end = self.tokenizer.end_of_text
            eos = end if end is not None and end < self.vocab else None
        options = GenerateOptions(max_new_tokens=int(max_new_tokens),
                                  temperature=float(temperature), top_k=int(top_k),
                                  top_p=float(top_p), seed=int(seed),
                                  eos=-1 if eos is None else int(eos), use_cache=int(use_cache))
        src = None if source is None else as_ids(source, "source")
        capacity = max(int(max_new_tokens), 1)
        out = np.empty(capacity, dtype=np.int32)
        count = ctypes.c_int64()
        self._check(self._lib.xf_session_generate(
            self._session, _i32(tokens), tokens.size, _i32(src), 0 if src is None else src.size,
            ctypes.byref(options), _i32(out), capacity, ctypes.byref(count)))
        ids = out[: count.value].tolist()
        return self.tokenizer.decode(ids) if text and self.tokenizer else ids

    def _encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            raise InvalidArgumentError("text input needs a tokenizer: xf.load(..., tokenizer=PATH)")
        bos = self.tokenizer.bos  # as the executables' --text and --prompt
        return ([bos] if bos is not None else []) + self.tokenizer.encode(text)

    def close(self) -> None:
        """Frees the session (also done when the model is garbage-collected)."""
        if getattr(self, "_session", None):
            self._lib.xf_session_destroy(self._session)
            self._session = ctypes.c_void_p()

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def load(library: PathLike, weights: Optional[PathLike] = None, *,
         random_seed: Optional[int] = None, tokenizer: Optional[PathLike] = None,
         threads: Optional[int] = None, cuda_graphs: Optional[bool] = None) -> Model:
    """Opens a model library (xf.compile's result) with `weights` (.safetensors, a sharded
    index .json, or .gguf) or deterministic random weights from `random_seed`; `tokenizer`
    as the executables' --tokenizer takes it; `threads` for the kernels (default: all);
    `cuda_graphs` for a library built for CUDA: decode steps replayed as CUDA graphs (default
    True, as the executables' --cuda-graphs; a CPU library ignores it)."""
    return Model(library, weights, random_seed=random_seed, tokenizer=tokenizer,
                 threads=threads, cuda_graphs=cuda_graphs)
