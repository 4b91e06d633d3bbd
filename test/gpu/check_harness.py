#!/usr/bin/env python3
"""ctest gpu-harness: the GPU harness of docs/gpu.md, end to end without a GPU.

Builds a --quick bundle (bundle.py: tiny and gpt2 at the e2e sizes, a 2-layer GPT-2 small),
unpacks its tarball elsewhere as a GPU machine would get it, replays it there with
`replay.sh --dry-run` (the stand-in driver: the host code runs, no kernel executes; ncu and
PyTorch only listed), and reads the results back with `compare_bundle.py --dry-run`. Fails if
the bundle is over its size limit, a run does not exit 0 or write its output, the profile
runs do not report kernel launches per decode step, the batch phase (8 sequences decoding
together, --serve with 16 clients) did not run, or the tune phase's times (the stand-in's, fake)
do not import into a tuning database.

usage: check_harness.py --xfc build/bin/xfc --stand-in build/lib/libxf-cuda-stand-in.so
"""
import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, **kw):
    print("$", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    print(r.stdout[-4000:], r.stderr[-2000:], sep="", flush=True)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--stand-in", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xf-gpu-harness-") as tmp:
        bundle, there, back = (os.path.join(tmp, d) for d in ("bundle", "there", "back"))
        r = run([sys.executable, os.path.join(HERE, "bundle.py"), "--xfc", args.xfc, "--out",
                 bundle, "--stand-in", args.stand_in, "--quick", "--tar"])
        if r.returncode:
            return fail("bundle.py failed")
        os.makedirs(there)
        with tarfile.open(bundle + ".tar.gz") as t:
            t.extractall(there)
        if os.path.exists(os.path.join(there, "ref")):
            return fail("the tarball ships the references")
        r = run(["bash", os.path.join(there, "replay.sh"), back, "--dry-run"])
        if r.returncode:
            return fail("replay.sh --dry-run failed")
        log = open(os.path.join(back, "log.txt")).read()
        phases = re.findall(r"^phase (\w+):", log, re.M)
        if phases != ["checks", "full", "tensor", "perf", "batch", "tune", "ncu", "torch"]:
            return fail(f"replay.sh's phases: {phases}")
        r = run([sys.executable, os.path.join(HERE, "compare_bundle.py"), bundle,
                 os.path.join(back, "results.tar.gz"), "--dry-run", "--xfc", args.xfc,
                 "--tuning-db", os.path.join(tmp, "gpu.db")])
        if r.returncode:
            return fail("compare_bundle.py --dry-run failed")
        failed = re.search(r"(\d+) runs, (\d+) failed", r.stdout)
        if not failed or failed[2] != "0":
            return fail("some runs failed")
        if not re.search(r"profile-gpt2-decode .*launches/xf_forward_cached \d+", r.stdout):
            return fail("no launch count per decode step in the profile run")
        if not re.search(r"batch-gpt2-ids +ran \(8 sequences\)", r.stdout) or \
                not re.search(r"serve-gpt2-16 +ran, 2048 tokens", r.stdout) or \
                not re.search(r"8 together \d+: [0-9.]+x", r.stdout):
            return fail("the batch phase's runs (8 sequences, --serve) did not all run")
        if not re.search(r"gpt2-tc-bf16_33 +ran", r.stdout) or \
                not re.search(r"time-gpt2-tc-tf32-prefill1024 +min_ms", r.stdout):
            return fail("the tensor phase's runs (--gpu-matmul) did not all run")
        if not re.search(r"gpt2 bf16 prefill 128: [0-9.]+ ms split-K, [0-9.]+ ms without", r.stdout):
            return fail("the tensor phase did not time split-K against XF_TENSOR_CORE_SPLIT_K=1")
        if not re.search(r"kernels of \d+ imported into .*gpu\.db as target 'GPU xf CUDA stand-in",
                         r.stdout):
            return fail("the tune phase's times were not imported (xfc tune --import)")
    print("OK")
    return 0


def fail(why):
    print("FAIL:", why)
    return 1


if __name__ == "__main__":
    sys.exit(main())
