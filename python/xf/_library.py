"""ctypes bindings of a model library's C API (xf.h, docs/c-api.md)."""
from __future__ import annotations

import ctypes
import json
import os
from ctypes import POINTER, c_char_p, c_double, c_int32, c_int64, c_uint64, c_void_p
from typing import Any

from ._errors import LoadError, error_for_status

API_VERSION = 1  # XF_API_VERSION of the xf.h these bindings follow


class GenerateOptions(ctypes.Structure):
    """xf_generate_options."""

    _fields_ = [
        ("max_new_tokens", c_int64),
        ("temperature", c_double),
        ("top_k", c_int64),
        ("top_p", c_double),
        ("seed", c_uint64),
        ("eos", c_int32),
        ("use_cache", c_int32),
    ]


_I32P, _F32P, _I64P = POINTER(c_int32), POINTER(ctypes.c_float), POINTER(c_int64)

# name: (restype, argtypes)
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "xf_api_version": (c_int32, []),
    "xf_last_error": (c_char_p, []),
    "xf_manifest_json": (c_char_p, []),
    "xf_set_threads": (c_int32, [c_int32]),
    "xf_set_cuda_graphs": (c_int32, [c_int32]),
    "xf_session_create": (c_int32, [c_char_p, POINTER(c_void_p)]),
    "xf_session_create_random": (c_int32, [c_uint64, POINTER(c_void_p)]),
    "xf_session_destroy": (None, [c_void_p]),
    "xf_session_error": (c_char_p, [c_void_p]),
    "xf_session_forward": (c_int32, [c_void_p, _I32P, c_int64, _I32P, c_int64, _F32P, c_int64]),
    "xf_session_decode": (c_int32, [c_void_p, _I32P, c_int64, c_int64, _F32P, c_int64]),
    "xf_session_embed": (c_int32, [c_void_p, _I32P, c_int64, c_int32, c_int32, _F32P, c_int64]),
    "xf_generate_defaults": (GenerateOptions, []),
    "xf_session_generate": (c_int32, [c_void_p, _I32P, c_int64, _I32P, c_int64,
                                      POINTER(GenerateOptions), _I32P, c_int64, _I64P]),
    "xf_tokenizer_load": (c_int32, [c_char_p, POINTER(c_void_p)]),
    "xf_tokenizer_destroy": (None, [c_void_p]),
    "xf_tokenizer_encode": (c_int32, [c_void_p, c_char_p, c_int64, _I32P, c_int64, _I64P]),
    "xf_tokenizer_decode": (c_int32, [c_void_p, _I32P, c_int64, c_char_p, c_int64, _I64P]),
    "xf_tokenizer_vocab_size": (c_int64, [c_void_p]),
    "xf_tokenizer_end_of_text": (c_int32, [c_void_p]),
    "xf_tokenizer_bos": (c_int32, [c_void_p]),
}


class Library:
    """A loaded model library: its C functions, with argument types, and its manifest."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        if not os.path.exists(self.path):
            raise LoadError(f"{self.path}: no such model library")
        try:
            self._dll = ctypes.CDLL(os.path.abspath(self.path), mode=os.RTLD_LOCAL)
        except OSError as e:
            raise LoadError(f"{self.path}: cannot load: {e}") from None
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                function = getattr(self._dll, name)
            except AttributeError:
                raise LoadError(f"{self.path}: not a model library built by xfc --emit=lib "
                                f"(no {name})") from None
            function.restype, function.argtypes = restype, argtypes
            setattr(self, name, function)
        version = self.xf_api_version()
        if version != API_VERSION:
            raise LoadError(f"{self.path}: C API version {version}; this package speaks "
                            f"version {API_VERSION}")
        self.manifest: dict[str, Any] = json.loads(self.xf_manifest_json().decode())

    def check(self, status: int) -> None:
        """Raises the exception for a failed call without a session (xf_last_error)."""
        if status != 0:
            raise error_for_status(status, self.xf_last_error().decode(errors="replace"))

    def check_session(self, status: int, session: c_void_p) -> None:
        """Raises the exception for a failed call on `session` (xf_session_error)."""
        if status != 0:
            raise error_for_status(status,
                                   self.xf_session_error(session).decode(errors="replace"))
