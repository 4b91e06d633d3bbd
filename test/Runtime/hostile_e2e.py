"""Generated executables under hostile or careless use (issue 18), through the fake models.

Run by ctest (runtime-hostile): hostile_e2e.py FAKE_DECODER FAKE_CACHED REFERENCE_DIR.
Every case ends in exit 1 or 2 with one "error:" line (or a stated warning), within seconds,
and leaves every file other than the intended output as it was.
"""
import json
import os
import resource
import stat
import subprocess
import sys
import tempfile
import unittest

import numpy as np

DECODER, CACHED, REFERENCE = sys.argv[1:4]
sys.path.insert(0, REFERENCE)
import safetensors_io  # noqa: E402


def run(exe, *args, env=None, preexec_fn=None, timeout=20):
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout,
                       env=None if env is None else {**os.environ, **env},
                       preexec_fn=preexec_fn)
    return p.returncode, p.stdout, p.stderr


def file_limit(size):
    """A preexec_fn: `ulimit -f` of `size` bytes in the child."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


class Hostile(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.w = self.path("w.safetensors")
        rc, _, err = run(DECODER, "--random-weights", "7", "--save-weights", self.w)
        self.assertEqual(rc, 0, err)

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_one_error(self, rc, err, code, text):
        self.assertEqual(rc, code, err)
        self.assertTrue(err.startswith("error: "), err)
        self.assertIn(text, err.splitlines()[0])
        self.assertEqual(err.count("\n"), 1, err)

    def leftovers(self):
        """Temporaries an output writer left in the directory (".NAME.XXXXXX")."""
        return [n for n in os.listdir(self.dir) if n.startswith(".")]

    # --- outputs: never through a link, never over a non-file, never half-written ----------

    def test_save_weights_refuses_non_regular_targets(self):
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        victim = self.path("victim")
        with open(victim, "w") as f:
            f.write("keep me")
        link = self.path("link.safetensors")
        os.symlink(victim, link)
        for target, what in [("/dev/null", "is a device"), (fifo, "is a FIFO"),
                             (link, "is a symbolic link"), (self.dir, "is a directory"),
                             (self.path("no/such/dir.st"), "does not exist")]:
            rc, _, err = run(DECODER, "--random-weights", "1", "--save-weights", target)
            self.assert_one_error(rc, err, 2, what)
        self.assertTrue(stat.S_ISCHR(os.stat("/dev/null").st_mode))
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertTrue(os.path.islink(link))
        with open(victim) as f:
            self.assertEqual(f.read(), "keep me")

    def test_planted_temporary_names_are_not_followed(self):
        victim = self.path("victim")
        with open(victim, "w") as f:
            f.write("keep me")
        out = self.path("out.safetensors")
        for planted in [out + ".tmp", self.path(".out.safetensors.tmp")]:
            os.symlink(victim, planted)
        rc, _, err = run(DECODER, "--random-weights", "2", "--save-weights", out)
        self.assertEqual(rc, 0, err)
        with open(victim) as f:
            self.assertEqual(f.read(), "keep me")
        self.assertIn("wte.weight", safetensors_io.load(out))

    def test_concurrent_saves_leave_one_whole_checkpoint(self):
        out = self.path("shared.safetensors")
        expected = []
        for seed in ["11", "12"]:
            p = self.path(f"s{seed}.safetensors")
            run(DECODER, "--random-weights", seed, "--save-weights", p)
            with open(p, "rb") as f:
                expected.append(f.read())
        for _ in range(6):
            procs = [subprocess.Popen([DECODER, "--random-weights", seed, "--save-weights", out],
                                      stderr=subprocess.PIPE) for seed in ["11", "12"]]
            for p in procs:
                p.communicate(timeout=20)
                self.assertEqual(p.returncode, 0)
            with open(out, "rb") as f:
                self.assertIn(f.read(), expected)
        self.assertEqual(self.leftovers(), [])

    def test_failed_writes_keep_the_previous_output(self):
        # A file-size limit makes each write fail (EFBIG; SIGXFSZ is ignored): one error line,
        # exit 1, the previous file byte for byte, no temporary left behind.
        logits = self.path("logits.npy")
        rc, _, err = run(DECODER, "--weights", self.w, "--tokens", "1,2,3", "--logits-out", logits)
        self.assertEqual(rc, 0, err)
        with open(logits, "rb") as f:
            good_logits = f.read()
        with open(self.w, "rb") as f:
            good_weights = f.read()
        copy = self.path("copy.safetensors")
        with open(copy, "wb") as f:
            f.write(good_weights)
        cases = [(["--weights", self.w, "--tokens", "3,2,1,4,5,6", "--logits-out", logits],
                  logits, good_logits),
                 (["--random-weights", "9", "--save-weights", copy], copy, good_weights)]
        for args, path, before in cases:
            rc, _, err = run(DECODER, *args, preexec_fn=file_limit(100))
            self.assert_one_error(rc, err, 1, "File too large")
            with open(path, "rb") as f:
                self.assertEqual(f.read(), before, path)
        self.assertEqual(self.leftovers(), [])

    def test_trace_is_written_atomically_and_bounded(self):
        trace = self.path("trace.json")
        # 250,001 runs: the first is a warm-up that is neither profiled nor traced.
        rc, _, err = run(DECODER, "--weights", self.w, "--tokens", "1", "--repeat", "250001",
                         "--profile", "--trace-out", trace, timeout=120)
        self.assertEqual(rc, 0, err)
        with open(trace) as f:
            data = json.load(f)
        self.assertEqual(len(data["traceEvents"]), 200000)
        self.assertEqual(data["otherData"]["dropped_calls"], 50000)
        self.assertIn("50000 later ones were not recorded", err)
        # The table aggregates every call, not only the traced ones.
        self.assertRegex(err, r"xf_k0_gemm\s+gemm\s+250000 ")

    # --- outputs that are inputs -------------------------------------------------------------

    def test_output_equal_to_an_input_is_refused(self):
        with open(self.w, "rb") as f:
            before = f.read()
        alias = self.path("alias.safetensors")
        os.link(self.w, alias)
        for args, text in [
                (["--weights", self.w, "--tokens", "1", "--logits-out", self.w],
                 "--logits-out " + self.w + ": the same file as --weights"),
                (["--weights", self.w, "--save-weights", alias], "the same file as --weights"),
                (["--weights", self.w, "--tokens", "1", "--logits-out", self.path("a.npy"),
                  "--trace-out", self.path("a.npy")], "give each output its own file")]:
            rc, _, err = run(DECODER, *args)
            self.assert_one_error(rc, err, 2, text)
        with open(self.w, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertFalse(os.path.exists(self.path("a.npy")))
        # A shard of an index is an input too.
        index = self.path("model.safetensors.index.json")
        with open(index, "w") as f:
            json.dump({"weight_map": {"wte.weight": "w.safetensors",
                                      "ln_f.weight": "w.safetensors"}}, f)
        rc, _, err = run(DECODER, "--weights", index, "--tokens", "1", "--logits-out", self.w)
        self.assert_one_error(rc, err, 1, "the same file as --weights (shard)")
        with open(self.w, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_outputs_into_the_tokenizer_directory_are_refused(self):
        # A tokenizer directory stands for the files in it (issue 33: --profile-out
        # DIR/vocab.json used to replace the vocabulary being read).
        tdir = self.path("bpe")
        os.mkdir(tdir)
        files = {"vocab.json": '{"a": 0}', "merges.txt": "#version: 0.2\n"}
        for name, text in files.items():
            with open(os.path.join(tdir, name), "w") as f:
                f.write(text)
        for option, name in [("--profile-out", "vocab.json"), ("--trace-out", "merges.txt"),
                             ("--logits-out", "vocab.json")]:
            target = os.path.join(tdir, name)
            rc, _, err = run(DECODER, "--weights", self.w, "--tokenizer", tdir, "--text", "a",
                             "--profile", option, target)
            self.assert_one_error(rc, err, 2, f"{option} {target}: the same file as "
                                              f"--tokenizer {tdir} ({target})")
        for name, text in files.items():
            with open(os.path.join(tdir, name)) as f:
                self.assertEqual(f.read(), text, name)

    def test_the_running_executable_is_never_an_output(self):
        exe = self.path("model")
        with open(DECODER, "rb") as src, open(exe, "wb") as dst:
            before = src.read()
            dst.write(before)
        os.chmod(exe, 0o755)
        link = self.path("model-link")
        os.link(exe, link)
        for target in [exe, link, os.path.relpath(exe)]:
            rc, _, err = run(exe, "--random-weights", "1", "--save-weights", target)
            self.assert_one_error(rc, err, 2, "the same file as the running executable")
        with open(exe, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_machine_file_that_is_not_a_machine_cache_is_left_alone(self):
        # XF_MACHINE_FILE names where --profile keeps the measured ceilings; a file that is
        # not such a cache (not JSON, or JSON of something else) is read-only to us.
        for name, text in [("notes.txt", "my notes\n"),
                           ("config.json", '{"model": "gpt2", "layers": 12}\n'),
                           ("list.json", "[1, 2]\n")]:
            path = self.path(name)
            with open(path, "w") as f:
                f.write(text)
            rc, _, err = run(DECODER, "--weights", self.w, "--tokens", "1", "--profile",
                             env={"XF_MACHINE_FILE": path})
            self.assertEqual(rc, 0, err)
            self.assertIn(f"note: {path}: not a machine cache", err)
            with open(path) as f:
                self.assertEqual(f.read(), text, name)
        # A machine cache is still kept up to date, other machines' entries kept.
        cache = self.path("machine.json")
        with open(cache, "w") as f:
            json.dump({"other cpu | avx2 | 1 threads": {"gflops": 1.0, "read_gbs": 2.0}}, f)
        rc, _, err = run(DECODER, "--weights", self.w, "--tokens", "1", "--profile",
                         env={"XF_MACHINE_FILE": cache})
        self.assertEqual(rc, 0, err)
        with open(cache) as f:
            kept = json.load(f)
        self.assertEqual(len(kept), 2, kept)
        self.assertEqual(kept["other cpu | avx2 | 1 threads"], {"gflops": 1.0, "read_gbs": 2.0})

    def test_usage_errors_are_one_line(self):
        for args in [["--no-such-option"], ["--weights"], ["--tokens", "1"],
                     ["--random-weights", "1", "--threads", "x"]]:
            rc, _, err = run(DECODER, *args)
            self.assertEqual(rc, 2, err)
            self.assertEqual(err.count("\n"), 1, err)
            self.assertTrue(err.startswith("error: "), err)
            self.assertIn("--help", err)

    # --- inputs: FIFOs do not hang ------------------------------------------------------------

    def test_fifo_inputs_fail_at_once(self):
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        index = self.path("model.safetensors.index.json")
        with open(index, "w") as f:
            json.dump({"weight_map": {"wte.weight": "fifo", "ln_f.weight": "fifo"}}, f)
        tok = self.path("tok")
        os.mkdir(tok)
        os.mkfifo(os.path.join(tok, "vocab.txt"))
        for args in [["--weights", fifo, "--tokens", "1"],
                     ["--weights", index, "--tokens", "1"],
                     ["--weights", self.w, "--vocab", fifo, "--text", "a"],
                     ["--weights", self.w, "--tokenizer", tok, "--text", "a"]]:
            rc, _, err = run(DECODER, *args, timeout=10)
            self.assert_one_error(rc, err, 1, "not a regular file (a FIFO)")

    # --- failures inside a run ------------------------------------------------------------------

    def test_halide_errors_become_one_error_line(self):
        rc, out, err = run(DECODER, "--weights", self.w, "--tokens", "1", "--print",
                           env={"XF_FAKE_HALIDE_ERROR": "1"})
        self.assert_one_error(rc, err, 1, "xf_forward failed: Halide: Out of memory "
                                          "(halide_malloc returned nullptr)")
        self.assertEqual(out, "")

    def test_checkpoint_truncated_while_mapped(self):
        victim = self.path("victim.safetensors")
        with open(self.w, "rb") as src, open(victim, "wb") as dst:
            dst.write(src.read())
        rc, _, err = run(DECODER, "--weights", victim, "--tokens", "1", "--print",
                         env={"XF_FAKE_TRUNCATE": victim})
        self.assert_one_error(rc, err, 1, victim + ": the file shrank or was rewritten")

    def test_threads_beyond_the_pool_are_refused(self):
        rc, _, err = run(DECODER, "--random-weights", "1", "--tokens", "1", "--threads", "4096")
        self.assert_one_error(rc, err, 2, "--threads: 4096 is more than 256")
        rc, _, err = run(DECODER, "--random-weights", "1", "--tokens", "1", "--threads", "256",
                         "--repeat", "1")
        self.assertEqual(rc, 0, err)
        self.assertIn("threads=256 ", err)

    # --- accepted before, now a warning or an error --------------------------------------------

    def test_non_finite_weights_warn_at_load(self):
        weights = {k: v.copy() for k, v in safetensors_io.load(self.w, as_float64=False).items()}
        weights["wte.weight"][1, 2] = np.nan
        weights["wte.weight"][3, 0] = np.inf
        weights["ln_f.weight"][0] = -np.inf
        bad = self.path("bad.safetensors")
        safetensors_io.save(bad, weights)
        rc, out, err = run(DECODER, "--weights", bad, "--tokens", "1", "--print")
        self.assertEqual(rc, 0, err)
        self.assertIn(f"warning: {bad}: tensor 'wte.weight' has 2 NaN/Inf values (the first at "
                      f"element 6), 1 more in 1 other tensor; outputs will be NaN", err)
        rc, _, err = run(DECODER, "--weights", self.w, "--tokens", "1", "--print")
        self.assertNotIn("warning", err)

    def test_duplicate_vocabulary_lines(self):
        vocab = self.path("vocab.txt")
        with open(vocab, "w") as f:
            f.write("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\nhello\n")
        rc, _, err = run(DECODER, "--weights", self.w, "--vocab", vocab, "--text", "hello")
        self.assert_one_error(rc, err, 1, f'{vocab}:7: token "hello" repeats line 5')

    def test_generated_ids_outside_the_vocabulary_are_shown(self):
        # A GPT-2 vocabulary of one token ("a" = 0) for a model of 16 ids: every other
        # generated id is printed as U+FFFD, and stderr says which.
        tdir = self.path("bpe")
        os.mkdir(tdir)
        with open(os.path.join(tdir, "vocab.json"), "w") as f:
            json.dump({"a": 0}, f)
        with open(os.path.join(tdir, "merges.txt"), "w") as f:
            f.write("#version: 0.2\n")
        w = self.path("c.safetensors")
        run(CACHED, "--random-weights", "3", "--save-weights", w)
        rc, ids_out, err = run(CACHED, "--weights", w, "--tokens", "0", "--max-new-tokens", "6",
                               "--eos", "none")
        self.assertEqual(rc, 0, err)
        ids = [int(t) for t in ids_out.strip().split(",")]
        rc, out, err = run(CACHED, "--weights", w, "--tokenizer", tdir, "--prompt", "a",
                           "--max-new-tokens", "6", "--eos", "none")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "".join("a" if i == 0 else "\ufffd" for i in ids) + "\n")
        missing = [i for i in ids if i != 0]
        self.assertTrue(missing, ids)  # seed 3 generates ids other than 0
        self.assertIn(f"not in the tokenizer's vocabulary, printed as U+FFFD: "
                      f"{', '.join(map(str, missing))}", err)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
