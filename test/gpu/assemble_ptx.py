#!/usr/bin/env python3
"""Assemble each kernel of `xfc --emit=ptx` output with ptxas (no GPU needed).

The output holds one PTX module per kernel after a `// ----- NAME` line; each is written to a
file of its own and assembled for --arch. Prints `assembled N kernels for ARCH`, or the first
failure's ptxas output and exits 1.

usage: assemble_ptx.py --ptxas /usr/local/cuda/bin/ptxas --arch sm_90 kernels.ptx
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ptxas", required=True)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("ptx")
    args = parser.parse_args()
    text = open(args.ptx).read()
    parts = re.split(r"^// ----- (\S+).*$", text, flags=re.M)
    modules = list(zip(parts[1::2], parts[2::2]))
    if not modules:
        print(f"{args.ptx}: no kernels", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for name, body in modules:
            if ".entry" not in body:
                print(f"{name}: no kernel entry in its PTX", file=sys.stderr)
                return 1
            path = os.path.join(tmp, name + ".ptx")
            with open(path, "w") as f:
                f.write(body)
            r = subprocess.run([args.ptxas, f"-arch={args.arch}", path, "-o", path + ".cubin"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name}: ptxas failed:\n{r.stdout}{r.stderr}", file=sys.stderr)
                return 1
    print(f"assembled {len(modules)} kernels for {args.arch}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
