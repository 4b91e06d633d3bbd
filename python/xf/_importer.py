"""xf.import_hf: a Hugging Face model directory as a spec, through ``xfc import``
(docs/import.md)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional, Union

from ._compiler import _cache_directory, _run
from ._errors import XfError

PathLike = Union[str, os.PathLike]


def import_hf(directory: PathLike, output: Optional[PathLike] = None, *,
              max_positions: Optional[int] = None) -> Path:
    """Writes the spec of a Hugging Face model directory (its ``config.json`` and the tensor
    names of its checkpoint) with ``xfc import`` and returns the spec's path, for
    ``xf.compile``; the weights stay in the directory (``xf.load(lib, DIR/model.safetensors,
    tokenizer=DIR)``). The spec is ordinary xf text, the user's to read and edit. Without
    ``output`` it goes to ``~/.cache/xf/specs``, named by the directory and a digest of its
    ``config.json``. ``max_positions`` caps the context (``--max-positions``). An unsupported
    ``model_type`` or option raises CompileError with xfc's one-line reason."""
    source = Path(directory)
    config = source / "config.json"
    if not config.is_file():
        raise XfError(f"{source}: no config.json (a Hugging Face model directory holds one)")
    if output is None:
        key = hashlib.sha256(os.path.abspath(source).encode() + b"\0" + config.read_bytes())
        if max_positions is not None:
            key.update(f"\0{max_positions}".encode())
        base = _cache_directory("specs")
        output = base / f"{source.resolve().name or 'model'}-{key.hexdigest()[:16]}.xf"
    args = ["import", os.fspath(source), "-o", os.fspath(output)]
    if max_positions is not None:
        args.append(f"--max-positions={int(max_positions)}")
    _run(args, None)
    return Path(output)
