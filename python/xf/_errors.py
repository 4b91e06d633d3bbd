"""The exceptions of the xf package: each carries xf's own message."""
from __future__ import annotations


class XfError(Exception):
    """An error reported by xf: by xfc (a located diagnostic) or by a model library."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.message = message
        #: The C API's xf_status (0 for errors raised before the library is called).
        self.status = status


class CompileError(XfError):
    """xfc failed; ``diagnostic`` is its stderr (``file:line:col: error: ...``)."""

    def __init__(self, diagnostic: str, command: list[str]) -> None:
        super().__init__(diagnostic.strip() or f"xfc failed: {' '.join(command)}")
        self.diagnostic = diagnostic
        self.command = command


class InvalidArgumentError(XfError, ValueError):
    """A malformed call: a wrong dtype or shape, an id out of range, a bad option."""


class BufferTooSmallError(XfError):
    """An output capacity below what the call writes (a bug in the caller of the C API)."""


class UnsupportedError(XfError):
    """The model has no such entry point (decode on an encoder, embed on a decoder)."""


class LoadError(XfError):
    """Weights or tokenizer files: missing, malformed, or not matching the model."""


class RuntimeFailure(XfError):
    """A kernel failed while running (out of memory, ...)."""


# xf_status (xf.h) -> the exception raised for it.
_BY_STATUS: dict[int, type[XfError]] = {
    1: InvalidArgumentError,
    2: BufferTooSmallError,
    3: UnsupportedError,
    4: LoadError,
    5: RuntimeFailure,
}


def error_for_status(status: int, message: str) -> XfError:
    """The exception for a failed C API call."""
    return _BY_STATUS.get(status, XfError)(message, status)
