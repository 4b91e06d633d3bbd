"""xf.compile and xf.emit: xfc run as a subprocess."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

from ._errors import CompileError, XfError

SpecSource = Union[str, os.PathLike]

_STAGES = ("ast", "xf", "fused", "kernels", "host", "halide", "ptx", "llvm", "asm")


def find_xfc() -> str:
    """The xfc to run: ``$XF_XFC``, else ``xfc`` on ``PATH``."""
    explicit = os.environ.get("XF_XFC")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise XfError(f"XF_XFC={explicit} is not an executable")
        return explicit
    found = shutil.which("xfc")
    if not found:
        raise XfError("xfc not found: set XF_XFC to its path or put xf's build/bin on PATH")
    return found


def _spec(spec_or_path: SpecSource) -> tuple[str, Optional[bytes]]:
    """xfc's input argument, and the spec text to send on stdin when it is given as text."""
    if isinstance(spec_or_path, os.PathLike):
        return os.fspath(spec_or_path), None
    if "\n" not in spec_or_path and Path(spec_or_path).is_file():
        return spec_or_path, None
    if "\n" not in spec_or_path:
        raise XfError(f"{spec_or_path}: no such spec file (a spec given as text has several lines)")
    return "-", spec_or_path.encode()


def _flags(target: str, defines: Optional[Mapping[str, object]], weight_type: str,
           extra_args: Sequence[str]) -> list[str]:
    flags = [f"--target={target}", f"--weight-type={weight_type}"]
    for name, value in (defines or {}).items():
        flags.append(f"-D{name}={value}")
    return flags + list(extra_args)


def _run(args: list[str], stdin: Optional[bytes]) -> str:
    command = [find_xfc()] + args
    done = subprocess.run(command, input=stdin, capture_output=True)
    if done.returncode != 0:
        raise CompileError(done.stderr.decode(errors="replace"), command)
    return done.stdout.decode(errors="replace")


def _cache_directory(name: str) -> Path:
    """~/.cache/xf/NAME ($XDG_CACHE_HOME/xf/NAME), created when missing."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xf" / name
    base.mkdir(parents=True, exist_ok=True)
    return base


def _default_output(spec_arg: str, text: Optional[bytes], flags: list[str]) -> Path:
    """A library path per spec and flags, under the user's cache directory (xfc's object
    cache makes a rebuild a link): a loaded library is never overwritten by another build."""
    key = hashlib.sha256()
    if text is None:  # the path and the text: an edited spec gets a library of its own
        key.update(os.path.abspath(spec_arg).encode() + b"\0")
        text = Path(spec_arg).read_bytes()
    key.update(text)
    key.update("\0".join(flags).encode())
    base = _cache_directory("libraries")
    stem = "spec" if spec_arg == "-" else Path(spec_arg).stem
    return base / f"lib{stem}-{key.hexdigest()[:16]}.so"


def compile(spec_or_path: SpecSource, *, target: str = "host",
            defines: Optional[Mapping[str, object]] = None, weight_type: str = "f32",
            output: Optional[SpecSource] = None, extra_args: Sequence[str] = ()) -> Path:
    """Builds a model library with ``xfc --emit=lib`` and returns its path.

    ``spec_or_path`` is a ``.xf`` file or the text of a spec. ``defines`` override
    hyperparameters (``{"L": 2}`` is ``-D L=2``); ``target`` and ``weight_type`` are xfc's
    ``--target`` and ``--weight-type``; ``extra_args`` go to xfc as they are. Without
    ``output`` the library goes to ``~/.cache/xf/libraries``, named by a digest of the spec
    and flags. xfc's object cache (``~/.cache/xf/objects``) keeps the compiled kernels, so
    building an unchanged spec again only links. A failed build raises CompileError carrying
    xfc's located diagnostic.
    """
    spec_arg, text = _spec(spec_or_path)
    flags = _flags(target, defines, weight_type, extra_args)
    out = Path(output) if output is not None else _default_output(spec_arg, text, flags)
    _run([spec_arg, "--emit=lib", "-o", os.fspath(out)] + flags, text)
    return out


def emit(spec_or_path: SpecSource, stage: str = "kernels", *, target: str = "host",
         defines: Optional[Mapping[str, object]] = None, weight_type: str = "f32",
         extra_args: Sequence[str] = ()) -> str:
    """The text of one stage of the pipeline (``xfc --emit=STAGE``): "xf", "fused",
    "kernels", "host", "halide", "llvm", "asm", ... (docs/pipeline.md)."""
    if stage not in _STAGES:
        raise XfError(f"stage '{stage}': expected one of {', '.join(_STAGES)}")
    spec_arg, text = _spec(spec_or_path)
    return _run([spec_arg, f"--emit={stage}"] + _flags(target, defines, weight_type, extra_args),
                text)
