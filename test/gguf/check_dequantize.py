#!/usr/bin/env python3
"""xf's dequantization of every supported GGUF type, bitwise against the numpy reference.

    check_dequantize.py XF_GGUF [--gguf-package]

Writes a GGUF file with random blocks of F32, F16, BF16 and every block type xf dequantizes
(Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS; scales drawn
to include zero, negative, subnormal and the largest half values; matrices with several rows
so the row layout and the dims order are checked too), dequantizes it with `xf-gguf
dequantize` and compares with gguf_format.dequantize, written from ggml's block definitions.
With --gguf-package (run by a Python that has the `gguf` package, test-only) the numpy
reference of every block type is also compared with gguf.quants.dequantize, an independent
implementation (exit 77 when the package is missing).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_format as gf  # noqa: E402


def random_scales(rng, n):
    """f16 bit patterns: mostly ordinary values, plus the edge cases (never inf or NaN)."""
    d = rng.standard_normal(n).astype(np.float16)
    edge = np.array([0.0, -0.0, 6.1e-5, -5.96e-8, 65504.0, -65504.0, 1.0, -1.0], np.float16)
    d[: min(n, len(edge))] = edge[: min(n, len(edge))]
    return d.view(np.uint8).reshape(n, 2)


# Byte offsets of the float16 fields (scales, minimums) in each block type; the other bytes
# (quants, packed sub-block scales, high bits) take every value.
HALF_FIELDS = {gf.Q8_0: [0], gf.Q4_0: [0], gf.Q4_1: [0, 2], gf.Q5_0: [0], gf.Q5_1: [0, 2],
               gf.IQ4_NL: [0], gf.Q2_K: [80, 82], gf.Q3_K: [108], gf.Q4_K: [0, 2],
               gf.Q5_K: [0, 2], gf.Q6_K: [208], gf.IQ4_XS: [0]}
BLOCK_TYPES = list(HALF_FIELDS)


def random_tensor(rng, gtype, ne):
    numel = int(np.prod(ne))
    if gtype == gf.F32:
        return rng.standard_normal(numel).astype("<f4").tobytes()
    if gtype == gf.F16:
        return rng.standard_normal(numel).astype("<f2").tobytes()
    if gtype == gf.BF16:
        return (rng.standard_normal(numel).astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
    per_block, block_bytes = gf.BLOCKS[gtype]
    n = numel // per_block
    blocks = rng.integers(0, 256, (n, block_bytes)).astype(np.uint8)
    for offset in HALF_FIELDS[gtype]:
        blocks[:, offset:offset + 2] = random_scales(rng, n)
    return blocks.tobytes()


def main():
    xf_gguf = sys.argv[1]
    package = "--gguf-package" in sys.argv[2:]
    if package:
        try:
            from gguf import quants, GGMLQuantizationType
        except ImportError:
            print("the gguf package is not installed: skipped")
            sys.exit(77)
    rng = np.random.default_rng(14)
    shapes = [[32], [64, 3], [96, 2, 2], [32, 1, 1, 5]]
    k_shapes = [[256], [512, 3], [256, 2, 2]]
    tensors = []
    for gtype in [gf.F32, gf.F16, gf.BF16] + BLOCK_TYPES:
        for k, ne in enumerate(k_shapes if gf.BLOCKS[gtype][0] == 256 else shapes):
            name = f"{gf.TYPE_NAMES[gtype].lower()}.{k}"
            tensors.append((name, gtype, ne, random_tensor(rng, gtype, ne)))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "blocks.gguf")
        gf.write_gguf(path, [("general.architecture", gf.STRING, "test"),
                             ("general.alignment", gf.U32, 64)], tensors, alignment=64)
        out = subprocess.run([xf_gguf, "dequantize", path, tmp], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"xf-gguf failed: {out.stderr}")
        written = dict(line.split() for line in out.stdout.splitlines())
        _, read_back = gf.read_gguf(path)
        failures = 0
        for (name, gtype, ne, raw), (name2, _, ne2, raw2) in zip(tensors, read_back):
            assert name == name2 and ne == ne2 and bytes(raw2) == raw, "reader/writer mismatch"
            want = gf.dequantize(gtype, raw, ne)
            if package and gtype not in (gf.F32, gf.F16, gf.BF16):
                theirs = quants.dequantize(np.frombuffer(raw, np.uint8),
                                           GGMLQuantizationType(gtype)).astype(np.float32)
                if not np.array_equal(theirs.reshape(want.shape).view(np.uint32),
                                      want.view(np.uint32)):
                    print(f"FAIL {name}: the numpy reference differs from gguf.quants")
                    failures += 1
            got = np.load(written[name])
            if got.shape != want.shape:
                print(f"FAIL {name}: shape {got.shape}, expected {want.shape}")
                failures += 1
            elif not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
                bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
                print(f"FAIL {name}: {len(bad)} elements differ, first at {bad[0]}: "
                      f"{got.flat[bad[0]]!r} vs {want.flat[bad[0]]!r}")
                failures += 1
        print(f"{len(tensors) - failures} passed, {failures} failed")
        sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
