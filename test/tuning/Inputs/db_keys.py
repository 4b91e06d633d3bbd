"""Prints the keys of a tuning database's entries (kernel signature, target, threads), sorted."""
import json
import sys

for key in sorted((e["kernel"], e["target"], e["threads"])
                  for e in json.load(open(sys.argv[1]))["entries"]):
    print(" | ".join(map(str, key)))
