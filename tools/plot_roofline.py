#!/usr/bin/env python3
"""Draws the roofline of a compiled model's kernels from its --profile-out JSON.

usage: tools/plot_roofline.py PROFILE.json -o roofline.png

    ./gpt2 --weights model.safetensors --tokens ... --repeat 10 --profile-out profile.json
    tools/plot_roofline.py profile.json -o roofline.png

x: arithmetic intensity (FLOPs per byte the roofline charges: weights once, activations per
row, K/V per context row); y: GFLOP/s. The ceilings are the file's "machine" (--peak, or
measured once per machine). Kernels without FLOPs (loop kernels) are listed with their GB/s.
Needs matplotlib (in the venv scripts/setup makes).
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("profile")
    p.add_argument("-o", "--output", required=True, help="PNG to write")
    args = p.parse_args()
    try:
        data = json.load(open(args.profile))
        machine, kernels = data["machine"], data["kernels"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{args.profile}: not a --profile-out file ({e})")
    if not machine:
        sys.exit(f"{args.profile}: no machine ceilings (run with --profile-out on this xf)")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peak, bandwidth = machine["gflops"], machine["read_gbs"]
    ridge = peak / bandwidth
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = [ridge / 64, ridge, ridge * 64]
    ax.plot(xs, [min(peak, x * bandwidth) for x in xs], color="black", lw=1.5,
            label=f"roofline: {peak:.0f} GFLOP/s, {bandwidth:.1f} GB/s")
    total = sum(k["ms"] for k in kernels) or 1
    memory_only = []
    for k in kernels:
        if k["ms"] <= 0 or k["bytes"] <= 0:
            continue
        if k["flops"] <= 0:
            memory_only.append(f'{k["name"]}: {k["bytes"] / k["ms"] * 1e-6:.1f} GB/s')
            continue
        x = k["flops"] / k["bytes"]
        y = k["flops"] / k["ms"] * 1e-6
        ax.scatter([x], [y], s=20 + 400 * k["ms"] / total, alpha=0.7)
        ax.annotate(f'{k["name"]} ({100 * k["fraction_of_bound"]:.0f}%)', (x, y), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f'{data.get("model", "")}: l={data.get("l")}, {data.get("runs")} runs '
                 f'({machine.get("source", "")})', fontsize=9)
    if memory_only:
        ax.text(0.01, 0.01, "no FLOPs:\n" + "\n".join(memory_only[:8]), transform=ax.transAxes,
                fontsize=6, va="bottom")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)


if __name__ == "__main__":
    main()
