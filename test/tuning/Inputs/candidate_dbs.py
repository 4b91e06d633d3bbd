"""Writes one tuning database per candidate of an `xfc tune --target cuda --export` manifest.

usage: candidate_dbs.py MANIFEST KIND OUTDIR

For each kernel whose signature starts with KIND ("attention", "gemm") and each of its
candidates, OUTDIR/<candidate function>.db holds one entry: the kernel's signature with that
candidate's schedule, keyed for a GPU ("GPU candidates | sm_90", 1 thread, the manifest's xf
version), so that `xfc --target cuda --tuning-db DB` builds the model with it (the one GPU the
database holds). Prints the files written, one a line.
"""
import json
import os
import sys

manifest, kind, out = sys.argv[1:4]
m = json.load(open(manifest))
os.makedirs(out, exist_ok=True)
for kernel in m["kernels"]:
    if not kernel["kernel"].startswith(kind + " "):
        continue
    for candidate in kernel["candidates"]:
        entry = {"kernel": kernel["kernel"], "target": "GPU candidates | sm_90", "threads": 1,
                 "xf_version": m["xf_version"], "schedule": candidate["schedule"],
                 "cost_ms": 1.0, "default_cost_ms": 1.0, "roofline_fraction": 0.0,
                 "measured_at": "2026-11-30T00:00:00Z", "seconds_spent": 0.0, "trials": []}
        path = os.path.join(out, candidate["function"] + ".db")
        with open(path, "w") as f:
            json.dump({"format": "xf-tuning-db", "version": 1, "entries": [entry]}, f, indent=1)
        print(path)
