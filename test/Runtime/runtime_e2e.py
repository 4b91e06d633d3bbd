"""End-to-end tests of libxfrt's main() through fake models (test/Runtime/Inputs/FakeModel.cpp).

Run by ctest: runtime_e2e.py FAKE_DECODER FAKE_SEQ2SEQ REFERENCE_DIR FAKE_CACHED
FAKE_SEQ2SEQ_LOGITS. The .safetensors files
the runtime writes are read back with the independent reader in test/reference, and logits are
recomputed with numpy from the saved weights.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

DECODER, SEQ2SEQ, REFERENCE, CACHED, SEQ2SEQ_LOGITS = sys.argv[1:6]
sys.path.insert(0, REFERENCE)
import safetensors_io  # noqa: E402


def run(exe, *args):
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def write_raw(path, header, data):
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def expected_logits(weights, tokens):
    wte, g = weights["wte.weight"], weights["ln_f.weight"]
    return (wte[tokens] * g) @ wte.T


class Decoder(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def saved_weights(self, seed=7):
        w = self.path(f"w{seed}.safetensors")
        rc, _, err = run(DECODER, "--random-weights", str(seed), "--save-weights", w)
        self.assertEqual(rc, 0, err)
        return w

    def test_help(self):
        rc, out, _ = run(DECODER, "--help")
        self.assertEqual(rc, 0)
        self.assertIn("model: fake-decoder (decoder, output logits [l, 16]", out)
        for flag in ["--weights", "--random-weights", "--save-weights", "--tokens",
                     "--source-tokens", "--logits-out", "--hidden-out", "--threads", "--repeat",
                     "--print"]:
            self.assertIn(flag, out)

    def test_random_save_load_round_trip(self):
        a, b, w = self.path("a.npy"), self.path("b.npy"), self.path("w.safetensors")
        rc, _, err = run(DECODER, "--random-weights", "7", "--tokens", "1,2,3",
                         "--logits-out", a, "--save-weights", w)
        self.assertEqual(rc, 0, err)
        rc, _, err = run(DECODER, "--weights", w, "--tokens", "1,2,3", "--logits-out", b)
        self.assertEqual(rc, 0, err)
        la, lb = np.load(a), np.load(b)
        self.assertEqual(la.dtype, np.float32)
        self.assertEqual(la.shape, (3, 16))
        self.assertEqual(la.tobytes(), lb.tobytes())
        # The saved file is valid for an independent reader, and the logits match numpy.
        weights = safetensors_io.load(w, as_float64=False)
        self.assertEqual(sorted(weights), ["ln_f.weight", "wte.weight"])
        self.assertEqual(weights["wte.weight"].dtype, np.float32)
        self.assertEqual(weights["wte.weight"].shape, (16, 4))
        self.assertEqual(safetensors_io.metadata(w), {"format": "pt"})
        np.testing.assert_allclose(la, expected_logits(weights, [1, 2, 3]), rtol=1e-5, atol=1e-7)
        # Init rules: "ones" near 1, "normal" N(0, 0.02).
        self.assertLess(abs(weights["ln_f.weight"].mean() - 1), 0.3)
        self.assertLess(abs(weights["wte.weight"]).max(), 0.2)

    def test_seed_determinism(self):
        a = safetensors_io.load(self.saved_weights(7))
        b = safetensors_io.load(self.saved_weights(7))
        c = safetensors_io.load(self.saved_weights(8))
        np.testing.assert_array_equal(a["wte.weight"], b["wte.weight"])
        self.assertFalse(np.array_equal(a["wte.weight"], c["wte.weight"]))

    def test_python_written_checkpoint_f32_f16(self):
        rng = np.random.default_rng(0)
        ref = {"wte.weight": rng.standard_normal((16, 4)).astype(np.float32),
               "ln_f.weight": rng.standard_normal(4).astype(np.float32),
               "h.0.attn.bias": np.ones((2, 2), np.float64)}  # extra tensor, ignored
        for dtype in [np.float32, np.float16]:
            w = self.path(f"py_{np.dtype(dtype).name}.safetensors")
            safetensors_io.save(w, {k: v.astype(dtype) if v.dtype == np.float32 else v
                                    for k, v in ref.items()})
            out = self.path("o.npy")
            rc, _, err = run(DECODER, "--weights", w, "--tokens", "0,15,3", "--logits-out", out)
            self.assertEqual(rc, 0, err)
            loaded = {k: v.astype(dtype).astype(np.float32) for k, v in ref.items()}
            np.testing.assert_allclose(np.load(out), expected_logits(loaded, [0, 15, 3]),
                                       rtol=1e-5, atol=1e-5)

    def test_bf16_checkpoint(self):
        ref = safetensors_io.load(self.saved_weights(), as_float64=False)
        header, data = {}, b""
        for name, a in ref.items():
            bits = (a.view(np.uint32) >> 16).astype("<u2").tobytes()  # truncate to bf16
            header[name] = {"dtype": "BF16", "shape": list(a.shape),
                            "data_offsets": [len(data), len(data) + len(bits)]}
            data += bits
        w = self.path("bf16.safetensors")
        write_raw(w, header, data)
        out = self.path("o.npy")
        rc, _, err = run(DECODER, "--weights", w, "--tokens", "4", "--logits-out", out)
        self.assertEqual(rc, 0, err)
        trunc = {k: (v.view(np.uint32) & 0xFFFF0000).view(np.float32) for k, v in ref.items()}
        np.testing.assert_allclose(np.load(out), expected_logits(trunc, [4]), rtol=1e-5,
                                   atol=1e-7)

    def test_sharded_index(self):
        ref = safetensors_io.load(self.saved_weights(), as_float64=False)
        os.mkdir(self.path("sharded"))
        safetensors_io.save(self.path("sharded/m-1.safetensors"), {"wte.weight": ref["wte.weight"]})
        safetensors_io.save(self.path("sharded/m-2.safetensors"), {"ln_f.weight": ref["ln_f.weight"]})
        index = self.path("sharded/model.safetensors.index.json")
        with open(index, "w") as f:
            json.dump({"metadata": {}, "weight_map": {"wte.weight": "m-1.safetensors",
                                                      "ln_f.weight": "m-2.safetensors"}}, f)
        a, b = self.path("a.npy"), self.path("b.npy")
        self.assertEqual(run(DECODER, "--weights", self.saved_weights(), "--tokens", "5,6",
                             "--logits-out", a)[0], 0)
        rc, _, err = run(DECODER, "--weights", index, "--tokens", "5,6", "--logits-out", b)
        self.assertEqual(rc, 0, err)
        self.assertEqual(np.load(a).tobytes(), np.load(b).tobytes())

    def test_bad_weights(self):
        ref = safetensors_io.load(self.saved_weights(), as_float64=False)
        wrong = self.path("wrong.safetensors")
        safetensors_io.save(wrong, {"wte.weight": np.zeros((16, 5), np.float32),
                                    "ln_f.weight": ref["ln_f.weight"]})
        rc, out, err = run(DECODER, "--weights", wrong, "--tokens", "1")
        self.assertEqual(rc, 1)
        self.assertEqual(err.strip(), f"error: {wrong}: tensor 'wte.weight': shape [16, 5] in "
                                      f"the file, but the model expects [16, 4]")
        missing = self.path("missing.safetensors")
        safetensors_io.save(missing, {"wte.weight": ref["wte.weight"]})
        rc, _, err = run(DECODER, "--weights", missing, "--tokens", "1")
        self.assertEqual(rc, 1)
        self.assertIn("tensor 'ln_f.weight': missing", err)
        good = self.saved_weights()
        with open(good, "rb") as f:
            blob = f.read()
        cases = {"truncated": blob[:-3], "tiny": blob[:5],
                 "header_len": struct.pack("<Q", 1 << 62) + blob[8:],
                 "bad_json": blob[:8] + b"[" + blob[9:],
                 "overlap": blob.replace(b'"data_offsets":[256,272]', b'"data_offsets":[252,268]')}
        for name, data in cases.items():
            p = self.path(name + ".safetensors")
            with open(p, "wb") as f:
                f.write(data)
            rc, _, err = run(DECODER, "--weights", p, "--tokens", "1")
            self.assertEqual(rc, 1, name)
            self.assertTrue(err.startswith(f"error: {p}: "), err)
            self.assertEqual(err.count("\n"), 1, err)
        rc, _, err = run(DECODER, "--weights", self.path("absent.safetensors"), "--tokens", "1")
        self.assertEqual(rc, 1)
        self.assertIn("cannot open", err)

    def test_bad_command_lines(self):
        w = self.saved_weights()
        for args in [["--frobnicate"], ["--tokens", "1"],
                     ["--random-weights", "1", "--tokens", "16"],
                     ["--random-weights", "1", "--tokens", "1,2,3,4,5,6,7,8,9"],
                     ["--random-weights", "1", "--tokens", "1,,2"],
                     ["--random-weights", "1", "--tokens", "abc"],
                     ["--random-weights", "1", "--tokens", "-1"],
                     ["--random-weights", "x", "--tokens", "1"],
                     ["--weights", w, "--random-weights", "1", "--tokens", "1"],
                     ["--random-weights", "1", "--tokens", "1", "--hidden-out", "h.npy"],
                     ["--random-weights", "1", "--tokens", "1", "--source-tokens", "1"],
                     ["--random-weights", "1", "--logits-out", "x.npy"],
                     ["--random-weights", "1", "--tokens", "1", "--threads", "0"],
                     ["--random-weights", "1", "--tokens", "1", "--repeat", "-2"]]:
            rc, out, err = run(DECODER, *args)
            self.assertEqual(rc, 2, args)
            self.assertTrue(err.startswith("error: "), err)
            # One line pointing at --help, not the whole help (issue 33).
            self.assertEqual(err.count("\n"), 1, err)
            self.assertTrue(err.endswith(" (see --help)\n"), err)

    def test_print_repeat_threads(self):
        w = self.saved_weights()
        rc, out, err = run(DECODER, "--weights", w, "--tokens", "3,9", "--print", "--repeat", "3",
                           "--threads", "2")
        self.assertEqual(rc, 0, err)
        self.assertIn("fake: halide_set_num_threads(2)", err)
        self.assertRegex(err, r"runs=3 min [0-9.]+ ms median [0-9.]+ ms")
        lines = out.splitlines()
        self.assertEqual(len(lines), 2)
        ids = [int(x) for x in lines[0].split()[1:]]
        logits = expected_logits(safetensors_io.load(w), [3, 9])[-1]
        self.assertEqual(ids, list(np.argsort(-logits, kind="stable")[:5]))


def cached_logits(weights, tokens):
    """FakeModel.cpp's FAKE_CACHED model: h_t = x_t + mean_{s<=t} x_s."""
    wte, g = weights["wte.weight"], weights["ln_f.weight"]
    x = wte[tokens] * g
    c = np.cumsum(x, axis=0) / np.arange(1, len(tokens) + 1)[:, None]
    return (x + c) @ wte.T


def greedy(logits_fn, prompt, n, eos=None, limit=None):
    x, new = list(prompt), []
    for _ in range(n):
        if limit is not None and len(x) > limit:
            break
        y = int(np.argmax(logits_fn(x)[-1]))
        x.append(y)
        new.append(y)
        if y == eos:
            break
    return new


def ids(stdout):
    return [[int(t) for t in line.split(",")] for line in stdout.strip().splitlines()]


class Generation(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.w = os.path.join(self.tmp.name, "w.safetensors")
        rc, _, err = run(CACHED, "--random-weights", "3", "--save-weights", self.w)
        self.assertEqual(rc, 0, err)
        self.weights = safetensors_io.load(self.w)

    def tearDown(self):
        self.tmp.cleanup()

    def test_greedy_cached_equals_rerun_and_numpy(self):
        want = greedy(lambda x: cached_logits(self.weights, x), [1, 2, 3], 6)
        rc, out, err = run(CACHED, "--weights", self.w, "--tokens", "1,2,3",
                           "--max-new-tokens", "6")
        self.assertEqual(rc, 0, err)
        self.assertEqual(ids(out), [want])
        self.assertIn("KV cache", err)
        self.assertRegex(err, r"prefill 3 tokens in [0-9.]+ ms \([0-9.]+ tokens/s\); decode 5 "
                              r"tokens in [0-9.]+ ms \([0-9.]+ ms/token")
        self.assertRegex(err, r"memory: peak resident [0-9.]+ MiB \(VmHWM\), checkpoint")
        rc, out2, err = run(CACHED, "--weights", self.w, "--tokens", "1,2,3",
                            "--max-new-tokens", "6", "--no-cache")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out2, out)
        self.assertIn("re-running the prefix", err)

    def test_without_cache_symbols(self):
        w = os.path.join(self.tmp.name, "d.safetensors")
        run(DECODER, "--random-weights", "5", "--save-weights", w)
        weights = safetensors_io.load(w)
        want = greedy(lambda x: expected_logits(weights, x), [4], 3)
        rc, out, err = run(DECODER, "--weights", w, "--tokens", "4", "--max-new-tokens", "3")
        self.assertEqual(rc, 0, err)
        self.assertEqual(ids(out), [want])
        self.assertIn("re-running the prefix", err)

    def test_position_limit(self):
        # cache_positions 10 < max_positions 12: a 4-token prompt grows to 10 tokens and the
        # 10th position's logits give a 7th new token; then it stops.
        rc, out, err = run(CACHED, "--weights", self.w, "--tokens", "1,2,3,4",
                           "--max-new-tokens", "50")
        self.assertEqual(rc, 0, err)
        want = greedy(lambda x: cached_logits(self.weights, x), [1, 2, 3, 4], 50, limit=10)
        self.assertEqual(ids(out), [want])
        self.assertEqual(len(want), 7)
        self.assertIn("stopped: the sequence reached the model's 10 positions (cache_positions)",
                      err)
        rc, out, err = run(CACHED, "--weights", self.w, "--tokens", "1,2,3,4",
                           "--max-new-tokens", "50", "--no-cache")
        self.assertIn("12 positions (max_positions)", err)
        self.assertEqual(len(ids(out)[0]), 9)

    def test_eos_and_batch(self):
        full = greedy(lambda x: cached_logits(self.weights, x), [5, 6], 6)
        eos = full[2]
        rc, out, err = run(CACHED, "--weights", self.w, "--tokens", "5,6", "--max-new-tokens",
                           "6", "--eos", str(eos))
        self.assertEqual(rc, 0, err)
        self.assertEqual(ids(out), [full[:full.index(eos) + 1]])
        self.assertIn("stop: eos", err)
        # A batch generates what single runs generate, sampling included.
        args = ["--weights", self.w, "--max-new-tokens", "5", "--temperature", "1.5",
                "--seed", "9"]
        single = [run(CACHED, *args, "--tokens", t)[1] for t in ["1", "2,3", "7,7,7"]]
        rc, out, err = run(CACHED, *args, "--tokens", "1", "--tokens", "2,3", "--tokens", "7,7,7")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "".join(single))

    def test_sampling_seeds(self):
        def sample(*extra):
            rc, out, err = run(CACHED, "--weights", self.w, "--tokens", "1", "--max-new-tokens",
                               "9", *extra)
            self.assertEqual(rc, 0, err)
            return ids(out)[0]
        a = sample("--temperature", "2", "--seed", "1")
        self.assertEqual(a, sample("--temperature", "2", "--seed", "1"))
        self.assertNotEqual(a, sample("--temperature", "2", "--seed", "2"))
        self.assertEqual(sample("--temperature", "2", "--top-k", "1", "--seed", "3"), sample())
        self.assertEqual(sample("--temperature", "2", "--top-p", "1e-6", "--seed", "3"), sample())
        self.assertEqual(sample("--temperature", "1", "--top-k", "4", "--top-p", "0.8",
                                "--seed", "5"),
                         sample("--temperature", "1", "--top-k", "4", "--top-p", "0.8",
                                "--seed", "5"))

    def test_encoder_decoder_bos(self):
        w = os.path.join(self.tmp.name, "ed.safetensors")
        run(SEQ2SEQ_LOGITS, "--random-weights", "2", "--save-weights", w)
        weights = safetensors_io.load(w)
        wte, g = weights["wte.weight"], weights["ln_f.weight"]

        def logits(src):
            return lambda x: (wte[x] * g + wte[src].mean(axis=0)) @ wte.T
        rc, out, err = run(SEQ2SEQ_LOGITS, "--weights", w, "--bos", "0", "--source-tokens",
                           "3,4,5", "--source-tokens", "9", "--max-new-tokens", "4")
        self.assertEqual(rc, 0, err)
        self.assertEqual(ids(out), [greedy(logits([3, 4, 5]), [0], 4),
                                    greedy(logits([9]), [0], 4)])
        rc, out, err = run(SEQ2SEQ_LOGITS, "--weights", w, "--tokens", "1,2", "--source-tokens",
                           "3", "--max-new-tokens", "2", "--no-cache")
        self.assertEqual(rc, 0, err)
        self.assertEqual(ids(out), [greedy(logits([3]), [1, 2], 2)])

    # A toy GPT-2 byte-level BPE over the fake model's 16 ids ("\u0120" is a leading space).
    BPE_VOCAB = ["h", "e", "l", "o", "\u0120", "w", "r", "d", "he", "ll", "hell", "hello",
                 "\u0120w", "!", "\u0120h", "<|endoftext|>"]

    def toy_bpe(self):
        tdir = os.path.join(self.tmp.name, "bpe")
        os.makedirs(tdir, exist_ok=True)
        with open(os.path.join(tdir, "vocab.json"), "w") as f:
            json.dump({t: i for i, t in enumerate(self.BPE_VOCAB)}, f)
        with open(os.path.join(tdir, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\nh e\nl l\nhe ll\nhell o\n\u0120 w\n\u0120 h\n")
        return tdir

    def test_prompt_with_bpe_tokenizer(self):
        vocab, tdir = self.BPE_VOCAB, self.toy_bpe()
        prompt = [11, 12, 3, 6, 2, 7]  # "hello world"
        want = greedy(lambda x: cached_logits(self.weights, x), prompt, 4, eos=15, limit=10)
        rc, out, err = run(CACHED, "--weights", self.w, "--tokenizer", tdir, "--prompt",
                           "hello world", "--max-new-tokens", "4")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "".join(vocab[i] for i in want if i != 15).replace("\u0120", " ")
                         + "\n")
        # --vocab/--merges name the same files; ids in, text out.
        rc, out2, err = run(CACHED, "--weights", self.w, "--vocab",
                            os.path.join(tdir, "vocab.json"), "--merges",
                            os.path.join(tdir, "merges.txt"), "--tokens",
                            ",".join(map(str, prompt)), "--max-new-tokens", "4")
        self.assertEqual((rc, out2), (0, out), err)
        # Without a tokenizer there is no default end-of-text id.
        rc, out3, err = run(CACHED, "--weights", self.w, "--tokens", ",".join(map(str, prompt)),
                            "--max-new-tokens", "4")
        self.assertEqual(ids(out3), [greedy(lambda x: cached_logits(self.weights, x), prompt, 4,
                                            limit=10)])
        rc, _, err = run(CACHED, "--weights", self.w, "--tokenizer", tdir, "--prompt", "xyz")
        self.assertEqual(rc, 2, err)  # characters outside this toy vocabulary: a bad argument
        self.assertIn("--prompt: byte 120 has no byte-level token", err)
        rc, _, err = run(CACHED, "--weights", self.w, "--tokenizer", self.tmp.name, "--prompt",
                         "hello")
        self.assertEqual(rc, 1)
        self.assertIn("holds neither vocab.json + merges.txt nor vocab.txt", err)

    def test_output_ids_and_json(self):
        # --output ids: the generated ids although a tokenizer is loaded (its end-of-text id
        # still stops generation); --output json: one line per sequence with ids and text.
        vocab, tdir = self.BPE_VOCAB, self.toy_bpe()
        prompt = [11, 12, 3, 6, 2, 7]  # "hello world"
        want = greedy(lambda x: cached_logits(self.weights, x), prompt, 4, eos=15, limit=10)
        base = ["--weights", self.w, "--tokenizer", tdir, "--prompt", "hello world",
                "--max-new-tokens", "4"]
        rc, out, err = run(CACHED, *base, "--output", "ids")
        self.assertEqual((rc, ids(out)), (0, [want]), err)
        rc, out, err = run(CACHED, *base, "--output", "json")
        self.assertEqual(rc, 0, err)
        line = json.loads(out)
        self.assertEqual(line["ids"], want)
        self.assertEqual(line["text"], "".join(vocab[i] for i in want if i != 15)
                         .replace("\u0120", " "))
        self.assertEqual((line["index"], line["prompt_tokens"]), (0, 6))
        self.assertNotIn("line", line)  # only --batch-file inputs have lines
        rc, out2, err = run(CACHED, *base, "--output", "text")
        rc0, out0, _ = run(CACHED, *base)
        self.assertEqual((rc, out2), (rc0, out0), err)  # text is the default with a tokenizer
        # Two sequences decode together; the lines come in input order, without a tokenizer
        # no "text".
        rc, out, err = run(CACHED, "--weights", self.w, "--tokens", "1,2", "--tokens", "5",
                           "--max-new-tokens", "3", "--output", "json")
        self.assertEqual(rc, 0, err)
        lines = [json.loads(t) for t in out.splitlines()]
        logits = lambda x: cached_logits(self.weights, x)
        self.assertEqual([(t["index"], t["ids"]) for t in lines],
                         [(0, greedy(logits, [1, 2], 3, limit=10)),
                          (1, greedy(logits, [5], 3, limit=10))])
        self.assertTrue(all("text" not in t for t in lines))
        for args, message in [(["--tokens", "1", "--max-new-tokens", "2", "--output", "text"],
                               "--output text needs a tokenizer"),
                              (["--tokens", "1", "--max-new-tokens", "2", "--output", "xml"],
                               "--output: 'xml' is not 'text', 'ids' or 'json'"),
                              (["--tokens", "1", "--output", "ids"],
                               "--output needs generation")]:
            rc, _, err = run(CACHED, "--weights", self.w, *args)
            self.assertEqual(rc, 2, args)
            self.assertIn(message, err.splitlines()[0])

    def test_text_with_wordpiece(self):
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", "the",
                 "cat", "##ty", "sat", "on", "mat", ".", ","]
        path = os.path.join(self.tmp.name, "vocab.txt")
        with open(path, "w") as f:
            f.write("\n".join(vocab) + "\n")
        a, b = os.path.join(self.tmp.name, "a.npy"), os.path.join(self.tmp.name, "b.npy")
        rc, _, err = run(CACHED, "--weights", self.w, "--vocab", path, "--text", "The CATTY sat.",
                         "--text", "hello worlds", "--logits-out", a)
        self.assertEqual(rc, 0, err)
        rc, _, err = run(CACHED, "--weights", self.w, "--tokens", "2,8,9,10,11,14,3", "--tokens",
                         "2,5,6,7,3", "--logits-out", b)
        self.assertEqual(rc, 0, err)
        self.assertEqual(np.load(a).tobytes(), np.load(b).tobytes())
        self.assertEqual(np.load(a).shape, (2, 7, 16))

    def test_bad_generation_command_lines(self):
        for args in [["--tokens", "1", "--temperature", "1"],
                     ["--tokens", "1", "--max-new-tokens", "2", "--logits-out", "x.npy"],
                     ["--tokens", "1", "--max-new-tokens", "2", "--eos", "16"],
                     ["--tokens", "1", "--max-new-tokens", "2", "--top-p", "2"],
                     ["--prompt", "hello"],
                     ["--tokens", "1", "--max-new-tokens", "2", "--bos", "1"]]:
            rc, out, err = run(CACHED, "--weights", self.w, *args)
            self.assertEqual(rc, 2, args)
            self.assertTrue(err.startswith("error: "), err)


class Batches(unittest.TestCase):
    def test_batch_file_errors(self):
        # One diagnostic per bad file, naming FILE:LINE; exit 2 with the usage.
        with tempfile.TemporaryDirectory() as d:
            def batch_file(text):
                f = os.path.join(d, "in.txt")
                with open(f, "w") as fh:
                    fh.write(text)
                return run(CACHED, "--random-weights", "1", "--batch-file", f,
                           "--max-new-tokens", "2")
            for text, message in [("1,2\n\n3,x\n", "in.txt:3: 'x' is not a token id"),
                                  ("1\n99\n", "in.txt:2: token id 99 at position 0 is out of range"),
                                  ("\n  \n", "in.txt: no inputs (every line is blank)")]:
                rc, out, err = batch_file(text)
                self.assertEqual(rc, 2, err)
                self.assertIn(message, err.splitlines()[0])
            # Terminal escape sequences in a file never reach the terminal (issue 33), and a
            # huge line is not echoed whole.
            rc, out, err = batch_file("1\n\x1b]0;owned\x07\x1b[2J" + "7" * 100000 + "\n")
            self.assertEqual(rc, 2, err)
            self.assertEqual(err.count("\n"), 1, err[:300])
            self.assertNotIn("\x1b", err)
            self.assertNotIn("\x07", err)
            self.assertIn("in.txt:2: '\\x1b]0;owned\\x07\\x1b[2J", err)
            self.assertLess(len(err), 300, err[:300])
            rc, _, err = run(CACHED, "--random-weights", "1", "--batch-file",
                             os.path.join(d, "missing.txt"), "--max-new-tokens", "2")
            self.assertEqual(rc, 2, err)
            self.assertIn("missing.txt", err.splitlines()[0])
            # An encoder-decoder's lines: SOURCE<TAB>TARGET, or SOURCE alone with --bos.
            f = os.path.join(d, "pairs.txt")
            for text, bos, message in [
                    ("1\t2\n3\n", [], "pairs.txt:2: encoder-decoder 'fake-seq2seq-logits' takes "
                                         "SOURCE<TAB>TARGET (one tab) on each line"),
                    ("1\t2\t3\n", [], "pairs.txt:1: encoder-decoder"),
                    ("1\t2\n", ["--bos", "1"], "pairs.txt:1: a source only (--bos gives the "
                                                "target), not SOURCE<TAB>TARGET"),
                    ("1\tx\n", [], "pairs.txt:1 (target): 'x' is not a token id"),
                    ("\t1\n", [], "pairs.txt:1 (source): empty token id at position 0")]:
                with open(f, "w") as fh:
                    fh.write(text)
                rc, _, err = run(SEQ2SEQ_LOGITS, "--random-weights", "1", "--batch-file", f,
                                 "--max-new-tokens", "2", *bos)
                self.assertEqual(rc, 2, err)
                self.assertIn(message, err.splitlines()[0])

    def test_logits_and_hidden_batches(self):
        with tempfile.TemporaryDirectory() as d:
            w = os.path.join(d, "w.safetensors")
            run(CACHED, "--random-weights", "4", "--save-weights", w)
            seqs = ["1,2,3", "4", "5,6"]
            singles = []
            for i, t in enumerate(seqs):
                f = os.path.join(d, f"s{i}.npy")
                self.assertEqual(run(CACHED, "--weights", w, "--tokens", t, "--logits-out", f)[0], 0)
                singles.append(np.load(f))
            f = os.path.join(d, "b.npy")
            args = [a for t in seqs for a in ("--tokens", t)]
            rc, out, err = run(CACHED, "--weights", w, *args, "--logits-out", f, "--print")
            self.assertEqual(rc, 0, err)
            b = np.load(f)
            self.assertEqual(b.shape, (3, 3, 16))
            for i, s in enumerate(singles):
                self.assertEqual(b[i, :len(s)].tobytes(), s.tobytes())
                self.assertFalse(b[i, len(s):].any())
            self.assertEqual(len(out.splitlines()), 6)
            # Embeddings of an encoder-decoder's hidden states, pooled and normalized.
            e = os.path.join(d, "e.npy")
            rc, _, err = run(SEQ2SEQ, "--random-weights", "1", "--tokens", "1,2,3", "--tokens",
                             "4", "--source-tokens", "5", "--embeddings-out", e, "--normalize",
                             "--save-weights", w)
            self.assertEqual(rc, 0, err)
            weights = safetensors_io.load(w)
            wte, g = weights["wte.weight"], weights["ln_f.weight"]
            want = []
            for t in [[1, 2, 3], [4]]:
                v = (wte[t] * g + wte[[5]].mean(axis=0)).mean(axis=0)
                want.append(v / np.linalg.norm(v))
            np.testing.assert_allclose(np.load(e), np.array(want), rtol=1e-5, atol=1e-6)
            rc, _, err = run(SEQ2SEQ, "--random-weights", "1", "--tokens", "1,2,3",
                             "--source-tokens", "5", "--embeddings-out", e, "--pool", "cls")
            self.assertEqual(rc, 0, err)
            np.testing.assert_allclose(np.load(e)[0], wte[1] * g + wte[5], rtol=1e-5, atol=1e-6)


class Seq2Seq(unittest.TestCase):
    def test_source_tokens(self):
        with tempfile.TemporaryDirectory() as d:
            rc, _, err = run(SEQ2SEQ, "--random-weights", "1", "--tokens", "1,2")
            self.assertEqual(rc, 2)
            self.assertIn("--source-tokens is required", err)
            rc, _, err = run(SEQ2SEQ, "--random-weights", "1", "--tokens", "1",
                             "--source-tokens", "1", "--logits-out", "x.npy")
            self.assertEqual(rc, 2)
            self.assertIn("use --hidden-out", err)
            h, w = os.path.join(d, "h.npy"), os.path.join(d, "w.safetensors")
            rc, _, err = run(SEQ2SEQ, "--random-weights", "1", "--tokens", "1,2,3",
                             "--source-tokens", "4,5", "--hidden-out", h, "--save-weights", w)
            self.assertEqual(rc, 0, err)
            weights = safetensors_io.load(w)
            wte, g = weights["wte.weight"], weights["ln_f.weight"]
            want = wte[[1, 2, 3]] * g + wte[[4, 5]].mean(axis=0)
            got = np.load(h)
            self.assertEqual(got.shape, (3, 4))
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
            rc, out, _ = run(SEQ2SEQ, "--help")
            self.assertIn("fake-seq2seq (encoder-decoder, output hidden", out)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
