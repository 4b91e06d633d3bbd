"""A malformed call per entry point raises an xf exception carrying xf's message."""
from __future__ import annotations

import numpy as np
import pytest

import xf


def test_forward_wrong_dtype_and_shape(gpt2_model):
    with pytest.raises(xf.InvalidArgumentError, match="integers, got dtype float32"):
        gpt2_model.forward(np.array([1.0, 2.0], dtype=np.float32))
    with pytest.raises(xf.InvalidArgumentError, match=r"1-D\), got shape \(2, 2\)"):
        gpt2_model.forward([[1, 2], [3, 4]])
    with pytest.raises(xf.InvalidArgumentError, match="at least one id"):
        gpt2_model.forward([])


def test_forward_id_out_of_range(gpt2_model):
    # The library's own check and message (xf_session_error).
    with pytest.raises(xf.InvalidArgumentError) as e:
        gpt2_model.forward([1, 300])
    assert str(e.value) == "ids: id 300 at 1 is outside the vocabulary [0, 300)"
    assert e.value.status == 1


def test_forward_too_long(gpt2_model):
    with pytest.raises(xf.InvalidArgumentError, match="81 ids exceed the 80 positions"):
        gpt2_model.forward([1] * 81)


def test_decode_errors(gpt2_model, minilm_model):
    with pytest.raises(xf.InvalidArgumentError,
                       match=r"positions 0\.\.80 exceed the KV cache's 80"):
        gpt2_model.decode([1] * 81, start=0)
    with pytest.raises(xf.UnsupportedError, match="no cached entry point"):
        minilm_model.decode([1], start=0)


def test_embed_errors(gpt2_model, minilm_model):
    with pytest.raises(xf.UnsupportedError, match="outputs logits"):
        gpt2_model.embed([1, 2])
    with pytest.raises(xf.InvalidArgumentError, match="pooling 'max'"):
        minilm_model.embed([1, 2], pooling="max")
    with pytest.raises(xf.InvalidArgumentError, match="id -3 at 0"):
        minilm_model.embed([-3])


def test_generate_errors(gpt2_model, minilm_model):
    with pytest.raises(xf.InvalidArgumentError, match="max_new_tokens 0 is below 1"):
        gpt2_model.generate([1], max_new_tokens=0)
    with pytest.raises(xf.InvalidArgumentError, match="eos 999 is outside"):
        gpt2_model.generate([1], eos=999)
    with pytest.raises(xf.InvalidArgumentError, match="needs a tokenizer"):
        gpt2_model.generate("hello")
    with pytest.raises(xf.UnsupportedError, match="generation needs logits"):
        minilm_model.generate([1])


def test_load_errors(gpt2, tmp_path):
    missing = tmp_path / "missing.safetensors"
    with pytest.raises(xf.LoadError, match=str(missing)):
        xf.load(gpt2.library, missing)
    with pytest.raises(xf.LoadError, match="no such model library"):
        xf.load(tmp_path / "libnone.so", random_seed=1)
    with pytest.raises(xf.InvalidArgumentError, match="either weights=PATH or random_seed"):
        xf.load(gpt2.library)
    not_a_library = tmp_path / "lib.so"
    not_a_library.write_text("not ELF")
    with pytest.raises(xf.LoadError, match="cannot load"):
        xf.load(not_a_library, random_seed=1)


def test_weights_of_another_model(gpt2, minilm, tmp_path):
    path = tmp_path / "minilm.safetensors"
    minilm.run("--random-weights", "1", "--save-weights", str(path))
    with pytest.raises(xf.LoadError, match="tensor"):
        xf.load(gpt2.library, path)


def test_compile_error_is_located():
    spec = "model broken\n\nhyperparameters\n  L = \n"
    with pytest.raises(xf.CompileError) as e:
        xf.compile(spec)
    assert "<stdin>:" in e.value.diagnostic and "error" in e.value.diagnostic
    with pytest.raises(xf.XfError, match="no such spec file"):
        xf.compile("does-not-exist.xf")


def test_emit_returns_the_stage(gpt2):
    from conftest import GPT2, ROOT
    text = xf.emit(ROOT / "examples" / "gpt2.xf", stage="kernels", defines=GPT2)
    assert "xf.gemm" in text and "schedule" in text
    with pytest.raises(xf.XfError, match="stage 'exe'"):
        xf.emit(ROOT / "examples" / "gpt2.xf", stage="exe")


def test_c_api_capacity_and_null_checks(gpt2_model):
    """The C API itself (xf.h), below the package's own checks: capacities and null pointers."""
    import ctypes

    lib, session = gpt2_model._lib, gpt2_model._session
    ids = np.array([1, 2], dtype=np.int32)
    ids_p = ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
    out = np.empty(2 * 300, dtype=np.float32)
    out_p = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    assert lib.xf_session_forward(session, ids_p, 2, None, 0, out_p, 599) == 2
    assert lib.xf_session_error(session) == b"the output holds 599 floats; the call writes 600"
    assert lib.xf_session_forward(session, ids_p, 2, None, 0, out_p, 600) == 0
    assert lib.xf_session_error(session) == b""
    assert lib.xf_session_forward(session, ids_p, 2, None, 0, None, 600) == 1
    assert lib.xf_session_forward(None, ids_p, 2, None, 0, out_p, 600) == 1
    assert lib.xf_last_error() == b"null session"
    count = ctypes.c_int64()
    new = np.empty(4, dtype=np.int32)
    new_p = new.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
    options = lib.xf_generate_defaults()  # 16 new tokens
    assert lib.xf_session_generate(session, ids_p, 2, None, 0, ctypes.byref(options), new_p, 4,
                                   ctypes.byref(count)) == 2
    assert lib.xf_session_error(session) == b"the output holds 4 ids; the call writes 16"
    assert lib.xf_session_create(None, None) == 1
    assert lib.xf_last_error() == b"xf_session_create: no weights path"
    assert lib.xf_session_create_random(1, None) == 1
    assert lib.xf_last_error() == b"xf_session_create: null output pointer"


def test_decode_positions_follow_the_sequence(gpt2):
    with xf.load(gpt2.library, random_seed=1) as model:
        with pytest.raises(xf.InvalidArgumentError, match="holds no sequence; decode from 0"):
            model.decode([1], start=3)
        prompt = [3, 17, 42, 7]
        new = model.generate(prompt, 4)  # the cache holds positions 0..6, sized for 8
        model.decode([new[-1]], start=7)
        with pytest.raises(xf.InvalidArgumentError,
                           match=r"positions 8\.\.8 exceed the KV cache's 8 \(sized by"):
            model.decode([1], start=8)
        model.decode([new[0]], start=4)  # back to position 4: 5.. are rewritten
        with pytest.raises(xf.InvalidArgumentError,
                           match=r"holds positions 0\.\.4 of this sequence; decode from 5"):
            model.decode([1], start=6)
        assert model.decode([1], start=0).shape == (300,)  # a new sequence, the full cache
        model.decode([2], start=1)
