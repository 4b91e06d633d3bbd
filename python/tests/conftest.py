"""Fixtures of the xf package's tests: small models built once per run, as a library (through
xf.compile) and as an executable (xfc -o), whose outputs the library's must equal.

XF_XFC names the xfc to test (ctest sets it); the package is imported from python/.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import xf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# Sizes of test/e2e/check_generation.py (gpt2) and check_examples.py (minilm).
GPT2 = {"L": 2, "H": 4, "d_e": 64, "d_mlp": 256, "N_V": 300, "l_max": 80}
MINILM = {"L": 2, "H": 4, "d_e": 48, "d_mlp": 96, "N_V": 200, "l_max": 40}
TRANSFORMER = {"L_enc": 2, "L_dec": 2, "H": 4, "d_e": 64, "d_mlp": 128, "N_V": 256}


@dataclass
class Built:
    library: Path
    executable: Path
    workdir: Path

    def run(self, *args: str) -> subprocess.CompletedProcess:
        """The executable with `args`; fails the test when it fails."""
        done = subprocess.run([str(self.executable), *args], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        return done


def build(workdir: Path, name: str, defines: dict) -> Built:
    spec = ROOT / "examples" / f"{name}.xf"
    library = xf.compile(spec, defines=defines, output=workdir / f"lib{name}.so")
    executable = workdir / name
    flags = [f"-D{k}={v}" for k, v in defines.items()]
    subprocess.run([xf.find_xfc(), str(spec), *flags, "-o", str(executable)], check=True,
                   timeout=900)
    return Built(library, executable, workdir)


@pytest.fixture(scope="session")
def gpt2(tmp_path_factory) -> Built:
    return build(tmp_path_factory.mktemp("gpt2"), "gpt2", GPT2)


@pytest.fixture(scope="session")
def minilm(tmp_path_factory) -> Built:
    return build(tmp_path_factory.mktemp("minilm"), "minilm", MINILM)


@pytest.fixture(scope="session")
def gpt2_model(gpt2) -> "xf.Model":
    return xf.load(gpt2.library, random_seed=1)


@pytest.fixture(scope="session")
def minilm_model(minilm) -> "xf.Model":
    return xf.load(minilm.library, random_seed=1)


@pytest.fixture(scope="session")
def transformer(tmp_path_factory) -> Built:
    """An encoder-decoder (Alg. 8): forward and generate take source ids."""
    return build(tmp_path_factory.mktemp("transformer"), "transformer", TRANSFORMER)
