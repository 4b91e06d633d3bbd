"""Checks an executable's --profile-out JSON against the kernels' own arithmetic.

usage: check_profile_json.py PROFILE.json GFLOPS GBS ROWS

For examples/tiny.xf (d_e = 16, d_mlp = 64, N_V = 64, two layers) run once on ROWS tokens:
the QKV GEMM (xf_gemm_0: K = 16, N = 48, bias) and the MLP up GEMM (xf_gemm_2: K = 16,
N = 64) must count 2·K·N FLOPs a row and K·N·4 weight bytes a call plus 4·(K + N) bytes a
row (docs/pipeline.md, "Roofline"); every kernel's bound and fraction must follow from its
FLOPs, bytes and time and the given ceilings.
"""
import json
import sys

profile, gflops, gbs, rows = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
p = json.load(open(profile))
assert p["machine"]["gflops"] == gflops and p["machine"]["read_gbs"] == gbs, p["machine"]
assert p["machine"]["source"] == "--peak", p["machine"]
kernels = {k["name"]: k for k in p["kernels"]}


def expect(name, K, N, calls):
    k = kernels[name]
    assert k["calls"] == calls, k
    flops = 2 * K * N * rows * calls
    weights, activations = 4 * K * N, 4 * (K + N) * rows
    byte_count = (weights + activations) * calls
    assert abs(k["flops"] - flops) <= 1e-5 * flops, (name, k["flops"], flops)
    assert abs(k["bytes"] - byte_count) <= 1e-5 * byte_count, (name, k["bytes"], byte_count)


expect("xf_gemm_0", 16, 48, 2)
expect("xf_gemm_2", 16, 64, 2)
for k in p["kernels"]:
    compute_s, memory_s = k["flops"] / (gflops * 1e9), k["bytes"] / (gbs * 1e9)
    bound = "compute" if compute_s >= memory_s else "memory"
    assert k["bound"] == bound, k
    fraction = max(compute_s, memory_s) / (k["ms"] * 1e-3)
    assert abs(k["fraction_of_bound"] - fraction) <= 1e-4 * fraction + 1e-9, (k, fraction)
    assert k["bytes"] > 0, k  # every kernel moves data, loop kernels included
print("ok", len(p["kernels"]), "kernels")
