#!/usr/bin/env python3
"""The public C API end to end (docs/c-api.md): builds a small GPT-2 with `xfc --emit=lib`,
compiles examples/c-api/generate.c against the xf.h copied next to it, and checks

  - the library exports the C API of xf.h and nothing else (no xf_forward, no Halide, no libxfrt);
  - the example's greedy ids equal the executable's (`--random-weights 1 --tokens ...
    --max-new-tokens 8`) on the same random weights;
  - a bad call (an id of -1) returns status 1 (XF_ERROR_INVALID_ARGUMENT) with its message;
  - a missing weights file fails the example with the loader's message, not a crash;
  - the static archive (`-o libgpt2.a`) defines the same globals, and the example linked with
    it prints what the one linked with the shared library prints.

usage: check_c_example.py --xfc build/bin/xfc --cc clang-22 [--cflag FLAG]... [--workdir DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFINES = ["-DL=2", "-DH=4", "-Dd_e=64", "-Dd_mlp=256", "-DN_V=300", "-Dl_max=80"]
PROMPT = "3,17,42,7"


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def must(cmd):
    r = run(cmd)
    if r.returncode:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}\n{r.stderr}")
    return r


def public_names():
    """The functions xf.h declares."""
    with open(os.path.join(ROOT, "runtime", "include", "xf", "xf.h")) as f:
        return set(re.findall(r"\b(xf_[a-z_]+)\(", f.read()))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--xfc", required=True)
    p.add_argument("--cc", required=True)
    p.add_argument("--cflag", action="append", default=[],
                   help="a flag for compiling the example (a sanitized build's)")
    p.add_argument("--workdir")
    a = p.parse_args()
    work = a.workdir or tempfile.mkdtemp(prefix="xf-capi-")
    os.makedirs(work, exist_ok=True)
    spec = os.path.join(ROOT, "examples", "gpt2.xf")
    lib = os.path.join(work, "libgpt2.so")
    must([a.xfc, spec, *DEFINES, "--emit=lib", "-o", lib])
    must([a.xfc, spec, *DEFINES, "-o", os.path.join(work, "gpt2")])
    failures = []
    if not os.path.isfile(os.path.join(work, "xf.h")):
        failures.append("xf.h was not copied next to the library")

    exported = set(must(["nm", "-D", "--defined-only", "--format=just-symbols", lib])
                   .stdout.split())
    declared = public_names()
    if exported != declared:
        failures.append(f"exports {sorted(exported - declared)} beyond xf.h, "
                        f"lacks {sorted(declared - exported)}")

    example = os.path.join(work, "generate")
    must([a.cc, "-std=c99", "-Wall", "-Werror", *a.cflag,
          os.path.join(ROOT, "examples", "c-api", "generate.c"),
          "-I", work, "-L", work, "-lgpt2", f"-Wl,-rpath,{work}", "-o", example])
    out = must([example, "--random", "1", PROMPT]).stdout.splitlines()
    exe = must([os.path.join(work, "gpt2"), "--random-weights", "1", "--tokens", PROMPT,
                "--max-new-tokens", "8", "--temperature", "0"]).stdout.splitlines()
    print(f"C API: {out[0]}\nexecutable: {exe[0]}")
    if out[0] != exe[0] or len(out[0].split(",")) != 8:
        failures.append(f"greedy ids {out[0]} differ from the executable's {exe[0]}")
    expected = "bad call: status 1: ids: id -1 at 0 is outside the vocabulary [0, 300)"
    if out[1] != expected:
        failures.append(f"bad call printed '{out[1]}', expected '{expected}'")

    # The static archive (-o NAME.a): the same exports, the same program output.
    archive = os.path.join(work, "libgpt2.a")
    must([a.xfc, spec, *DEFINES, "--emit=lib", "-o", archive])
    archived = set(must(["nm", "--defined-only", "--extern-only", "--format=just-symbols",
                         archive]).stdout.split()) - {"model.o:"}
    if archived != declared:
        failures.append(f"the archive defines {sorted(archived - declared)} beyond xf.h, "
                        f"lacks {sorted(declared - archived)}")
    static = os.path.join(work, "generate-static")
    must([a.cc, "-std=c99", "-Wall", "-Werror", *a.cflag,
          os.path.join(ROOT, "examples", "c-api", "generate.c"), "-I", work, archive,
          "-lstdc++", "-lpthread", "-ldl", "-lm", "-o", static])
    out_static = must([static, "--random", "1", PROMPT]).stdout.splitlines()
    if out_static != out:
        failures.append(f"the statically linked example printed {out_static}, the shared {out}")

    missing = os.path.join(work, "missing.safetensors")
    r = run([example, missing, PROMPT])
    if r.returncode != 1 or missing not in r.stderr or not r.stderr.startswith("error: "):
        failures.append(f"missing weights: exit {r.returncode}, stderr {r.stderr!r}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
