"""Looks into an xf object cache directory for the lit tests of test/Codegen/object-cache*.test.

  object_cache.py bytes DIR [--plus N]   total bytes of the entries (+ N)
  object_cache.py check DIR MAX          at most MAX bytes of entries, and nothing but them and
                                         the key (no temporaries) left
  object_cache.py damage DIR             damages every entry: truncated, one payload bit
                                         flipped, or a foreign header, in turn; prints the count
"""
import os
import sys


def entries(directory):
    return sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".xfo"))


def main(argv):
    command, directory = argv[1], argv[2]
    if command == "bytes":
        plus = int(argv[4]) if len(argv) > 4 and argv[3] == "--plus" else 0
        print(sum(os.path.getsize(p) for p in entries(directory)) + plus)
    elif command == "check":
        total = sum(os.path.getsize(p) for p in entries(directory))
        others = [n for n in os.listdir(directory) if not n.endswith(".xfo") and n != "key"]
        if total > int(argv[3]) or others:
            sys.exit(f"{total} bytes of entries (limit {argv[3]}), other files: {others}")
    elif command == "damage":
        paths = entries(directory)
        for i, path in enumerate(paths):
            data = bytearray(open(path, "rb").read())
            if i % 3 == 0:
                data = data[: len(data) // 2]
            elif i % 3 == 1:
                data[len(data) - 100] ^= 0x10
            else:
                data[0:8] = b"\x7fELF\x02\x01\x01\x00"
            open(path, "wb").write(bytes(data))
        print(len(paths))
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
