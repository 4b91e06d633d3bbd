#!/usr/bin/env python3
"""Assemble each kernel of `xfc --emit=ptx` output with ptxas (no GPU needed).

The output holds one PTX module per kernel after a `// ----- NAME` line; each is written to a
file of its own and assembled for --arch. Prints `assembled N kernels for ARCH`, or the first
failure's ptxas output and exits 1.

--report: ptxas -v's resources of every entry function (a module may hold several: a
pipeline's GPU loop nests, its specializations), one line each:
  entry <function> (<kernel>): <R> registers, <F> bytes stack frame, spills <S>/<L> bytes
and fails (exit 1) if an entry spills registers to local memory (spill stores or loads) or
uses more than --max-registers. Shared memory is dynamic in Halide's kernels (the launch sets
it; the stand-in driver logs and bounds it, test/Gpu/launches.test); an MLIR kernel's dynamic
shared memory is named on its `// -----` line per function (`dynamic shared memory: ENTRY N
bytes, ...`), reported as `+ N dynamic` and, with its static shared memory, bounded by
--max-shared (an sm_90 block's opt-in 227 KiB by default). A module whose PTX targets sm_90a
(the wgmma GEMMs, `<name>_wg`) is assembled for sm_90a whatever --arch says.

usage: assemble_ptx.py --ptxas /usr/local/cuda/bin/ptxas --arch sm_90 [--report] kernels.ptx
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
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--max-registers", type=int, default=255)
    parser.add_argument("--max-shared", type=int, default=232448)
    parser.add_argument("ptx")
    args = parser.parse_args()
    text = open(args.ptx).read()
    parts = re.split(r"^// ----- (\S+)(.*)$", text, flags=re.M)
    modules = list(zip(parts[1::3], parts[2::3], parts[3::3]))
    if not modules:
        print(f"{args.ptx}: no kernels", file=sys.stderr)
        return 1
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, title, body in modules:
            listed = title.split("dynamic shared memory:")[1] if "dynamic shared memory:" in title \
                else ""
            dynamic = {entry: int(n) for entry, n in re.findall(r"(\w+) (\d+) bytes", listed)}
            if ".entry" not in body:
                print(f"{name}: no kernel entry in its PTX", file=sys.stderr)
                return 1
            path = os.path.join(tmp, name + ".ptx")
            with open(path, "w") as f:
                f.write(body)
            # the wgmma kernels' modules (`<name>_wg`) are PTX for sm_90a only
            arch = "sm_90a" if re.search(r"^\.target sm_90a", body, re.M) else args.arch
            r = subprocess.run([args.ptxas, f"-arch={arch}", *(["-v"] if args.report else []),
                                path, "-o", path + ".cubin"], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name}: ptxas failed:\n{r.stdout}{r.stderr}", file=sys.stderr)
                return 1
            if args.report:
                entries = resources(r.stdout + r.stderr)
                if not entries:
                    print(f"{name}: no resources in ptxas -v's output", file=sys.stderr)
                    return 1
                for entry in entries:
                    extra = dynamic.get(entry["function"], 0)
                    print(f"entry {entry['function']} ({name}): {entry['registers']} registers, "
                          f"{entry['stack']} bytes stack frame, spills {entry['spill_stores']}/"
                          f"{entry['spill_loads']} bytes, {entry['shared']} bytes shared"
                          + (f" + {extra} dynamic" if extra else ""))
                    if entry["shared"] + extra > args.max_shared:
                        problems.append(f"{entry['function']} ({name}) uses "
                                        f"{entry['shared'] + extra} bytes of shared memory "
                                        f"(more than {args.max_shared})")
                    if entry["spill_stores"] or entry["spill_loads"]:
                        problems.append(f"{entry['function']} ({name}) spills registers")
                    if entry["registers"] > args.max_registers:
                        problems.append(f"{entry['function']} ({name}) uses {entry['registers']} "
                                        f"registers (more than {args.max_registers})")
    for problem in problems:
        print("error:", problem, file=sys.stderr)
    if problems:
        return 1
    print(f"assembled {len(modules)} kernels for {args.arch}")
    return 0


def resources(text):
    """Each entry function's registers, stack frame and spills from ptxas -v."""
    entries = []
    for line in text.splitlines():
        if m := re.search(r"Compiling entry function '([^']+)'", line):
            entries.append({"function": m[1], "registers": 0, "stack": 0, "spill_stores": 0,
                            "spill_loads": 0, "shared": 0})
        elif entries and (m := re.search(
                r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)):
            entries[-1].update(stack=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        elif entries and (m := re.search(r"Used (\d+) registers", line)):
            entries[-1]["registers"] = int(m[1])
            if s := re.search(r"(\d+) bytes smem", line):
                entries[-1]["shared"] = int(s[1])
    return entries


if __name__ == "__main__":
    sys.exit(main())
