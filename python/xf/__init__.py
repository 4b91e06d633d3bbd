"""xf from Python: compile a transformer spec into a model library and run it.

    import xf
    lib = xf.compile("examples/gpt2.xf")
    model = xf.load(lib, "model.safetensors", tokenizer="gpt2-tokenizer/")
    print(model.generate("Hello, my name is", max_new_tokens=20))

See docs/python.md.
"""
from ._compiler import compile, emit, find_xfc
from ._errors import (BufferTooSmallError, CompileError, InvalidArgumentError, LoadError,
                      RuntimeFailure, UnsupportedError, XfError)
from ._importer import import_hf
from ._library import API_VERSION
from ._model import Model, load
from ._tokenizer import Tokenizer

__all__ = ["compile", "emit", "find_xfc", "load", "import_hf", "Model", "Tokenizer", "XfError",
           "CompileError", "InvalidArgumentError", "BufferTooSmallError", "UnsupportedError",
           "LoadError", "RuntimeFailure", "API_VERSION"]
__version__ = "0.1.0"
