"""Prints, for each xf_forward* entry point of a host module, the derived-buffer slots it reads.

Usage: derived_slots.py < HOST.mlir

One line per entry point: its name, then the index of every slot it loads from its
derived-buffers argument (%arg1: derived weights, then the weights packed at load), in the
order of the loads. An entry point and its packed-batch twin run the same kernels on the
same weights, so their lines must agree.
"""
import re
import sys

FUNC = re.compile(r"^  func\.func @(xf_forward\w*)\(")
SLOT = re.compile(r"llvm\.getelementptr %arg1\[%c(\d+)_i64(?:_\d+)?\] : "
                  r"\(!llvm\.ptr, i64\) -> !llvm\.ptr, !llvm\.ptr")

name = None
for line in sys.stdin:
    if line.startswith("  func.func "):
        if name:
            print(name, *slots)
        match = FUNC.match(line)
        name, slots = (match.group(1), []) if match else (None, None)
    elif name and (slot := SLOT.search(line)):
        slots.append(slot.group(1))
if name:
    print(name, *slots)
