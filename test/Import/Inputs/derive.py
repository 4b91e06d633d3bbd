#!/usr/bin/env python3
"""A model directory for the importer's tests: SRC's config.json with keys changed, and
optionally a model.safetensors holding only names (every tensor F32 [1]).

usage: derive.py SRC DST [KEY=JSON ...] [-KEY ...] [--layers L --tensors NAME ...]
  KEY=JSON sets a key ('rope_scaling={"rope_type": "llama3"}'), -KEY removes it;
  --tensors writes DST/model.safetensors with these names, '{l}' expanded for 0 .. L-1."""
import json
import os
import struct
import sys


def main(argv):
    src, dst, rest = argv[0], argv[1], argv[2:]
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    layers, names = 0, None
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--layers":
            layers, i = int(rest[i + 1]), i + 2
        elif arg == "--tensors":
            names, i = rest[i + 1:], len(rest)
        elif arg.startswith("-"):
            config.pop(arg[1:], None)
            i += 1
        else:
            key, value = arg.split("=", 1)
            config[key] = json.loads(value)
            i += 1
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    if names is not None:
        expanded = []
        for n in names:
            expanded += [n.replace("{l}", str(l)) for l in range(layers)] if "{l}" in n else [n]
        header = {n: {"dtype": "F32", "shape": [1], "data_offsets": [4 * k, 4 * k + 4]}
                  for k, n in enumerate(expanded)}
        text = json.dumps(header).encode()
        with open(os.path.join(dst, "model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + bytes(4 * len(expanded)))


if __name__ == "__main__":
    main(sys.argv[1:])
