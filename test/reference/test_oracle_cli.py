"""The command line as the executables' tests will call it."""
import os
import subprocess
import sys

import numpy as np
import pytest

import safetensors_io as st
from architectures import forward
from checkpoints import hparams

ORACLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "oracle.py")
HP = {"gpt2": "L=1,H=2,d_e=8,d_mlp=16,N_V=19,l_max=10",
      "minilm": "L=1,H=2,d_e=8,d_mlp=16,N_V=19,l_max=10",
      "transformer": "L_enc=1,L_dec=1,H=2,d_e=8,d_mlp=16,N_V=19"}


def oracle(*args):
    r = subprocess.run([sys.executable, ORACLE, *map(str, args)], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture
def weights(tmp_path):
    def make(arch):
        p = tmp_path / f"{arch}.safetensors"
        assert oracle("--arch", arch, "--hparams", HP[arch], "--write-random", p,
                      "--seed", 3)[0] == 0
        return p
    return make


def test_logits_out_matches_library_and_check_against(weights, tmp_path):
    w = weights("gpt2")
    out = tmp_path / "l.npy"
    rc, _, err = oracle("--arch", "gpt2", "--hparams", HP["gpt2"], "--weights", w,
                        "--tokens", "1,2,3,4", "--logits-out", out)
    assert rc == 0, err
    got = np.load(out)
    assert got.shape == (4, 19) and got.dtype == np.float64
    want = forward("gpt2", st.load(w), hparams("gpt2", HP["gpt2"]), [1, 2, 3, 4])
    np.testing.assert_array_equal(got, want)
    # an "executable" output rounded to float32 passes; one perturbed by 1e-3 relative fails
    exe = tmp_path / "exe.npy"
    np.save(exe, got.astype(np.float32))
    rc, so, _ = oracle("--arch", "gpt2", "--hparams", HP["gpt2"], "--weights", w,
                       "--tokens", "1,2,3,4", "--check-against", exe)
    assert rc == 0 and "ok" in so
    bad = got.copy()
    bad[2, 5] += 1e-3 * np.abs(got).max()
    np.save(exe, bad)
    rc, so, _ = oracle("--arch", "gpt2", "--hparams", HP["gpt2"], "--weights", w,
                       "--tokens", "1,2,3,4", "--check-against", exe)
    assert rc == 1 and "FAIL" in so


def test_hidden_out_for_encoders_and_float32_option(weights, tmp_path):
    w = weights("minilm")
    out = tmp_path / "h.npy"
    rc, _, err = oracle("--arch", "minilm", "--hparams", HP["minilm"], "--weights", w,
                        "--tokens", "4,5,6", "--hidden-out", out, "--out-dtype", "float32")
    assert rc == 0, err
    assert np.load(out).shape == (3, 8) and np.load(out).dtype == np.float32
    rc, _, err = oracle("--arch", "minilm", "--hparams", HP["minilm"], "--weights", w,
                        "--tokens", "4,5,6", "--logits-out", out)
    assert rc == 2 and "--hidden-out" in err


def test_generate_prints_ids(weights):
    w = weights("transformer")
    base = ["--arch", "transformer", "--hparams", HP["transformer"], "--weights", w,
            "--source-tokens", "3,4,5", "--tokens", "1", "--generate", "--max-new-tokens", 5]
    rc, so, err = oracle(*base)
    assert rc == 0, err
    ids = [int(t) for t in so.strip().split(",")]
    assert len(ids) == 5 and all(0 <= t < 19 for t in ids)
    rc, so2, _ = oracle(*base, "--temperature", "0.9", "--seed", 4)
    assert rc == 0 and so2 == oracle(*base, "--temperature", "0.9", "--seed", 4)[1]
    rc, so3, _ = oracle(*base, "--eos", ids[0])
    assert so3.strip() == str(ids[0])


def test_errors_are_clear(weights, tmp_path):
    w = weights("gpt2")
    # hyperparameters that disagree with the file: the message names tensor and shapes
    rc, _, err = oracle("--arch", "gpt2", "--hparams", "L=1,H=2,d_e=8,d_mlp=16,N_V=20,l_max=10",
                        "--weights", w, "--tokens", "1", "--logits-out", tmp_path / "o.npy")
    assert rc == 2 and "wte.weight" in err and "[19, 8]" in err and "[20, 8]" in err
    corrupt = tmp_path / "bad.safetensors"
    corrupt.write_bytes(w.read_bytes()[:-10])  # truncated data section
    rc, _, err = oracle("--arch", "gpt2", "--hparams", HP["gpt2"], "--weights", corrupt,
                        "--tokens", "1", "--logits-out", tmp_path / "o.npy")
    assert rc == 2 and "out of bounds" in err
    rc, _, err = oracle("--arch", "gpt2", "--hparams", HP["gpt2"], "--weights", w,
                        "--tokens", "1,x", "--logits-out", tmp_path / "o.npy")
    assert rc == 2 and "--tokens" in err
    rc, _, err = oracle("--arch", "gpt2", "--hparams", HP["gpt2"], "--weights", w,
                        "--tokens", "1,2", "--generate", "--max-new-tokens", 9)
    assert rc == 2 and "l_max" in err
