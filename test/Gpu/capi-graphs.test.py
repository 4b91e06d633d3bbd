"""capi-graphs.test's driver: a CUDA library's session decoding through the Python package.

usage: capi-graphs.test.py LIBRARY on|off
"""
import sys

import xf

library, graphs = sys.argv[1], sys.argv[2] == "on"
model = xf.load(library, random_seed=1, **({} if graphs else {"cuda_graphs": False}))
model.decode([1, 2, 3], 0)
for step in range(5):
    model.decode([4 + step], 3 + step)
print("5 decode steps")
if not graphs:
    status = model._lib.xf_set_cuda_graphs(2)
    print(f"xf_set_cuda_graphs({2}): {model._lib.xf_last_error().decode()}" if status else
          "xf_set_cuda_graphs(2) accepted")
    try:
        xf.load(library, random_seed=1, cuda_graphs=1)
    except xf.InvalidArgumentError as e:
        print(f"cuda_graphs=1: {e}")
model.close()
