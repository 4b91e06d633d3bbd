#!/usr/bin/env python3
"""A stand-in for xf-tune-worker (the protocol of compiler/lib/Tuning/WorkerClient.cpp) that
answers at once: every candidate correct and as fast as every other (50 us a row), so that
every path keeps the default and a run's course depends only on its kernels. Appends each
request's kernel description to $XF_FAKE_LOG."""
import json
import os
import sys

if "--machine" in sys.argv:
    print(json.dumps({"fma_gflops": 100.0, "read_gbs": 10.0, "isa": "scripted", "cpu": "none"}))
    sys.exit(0)
request = json.loads(sys.stdin.read())
with open(os.environ["XF_FAKE_LOG"], "a") as log:
    log.write(request["kernel"] + "\n")
rounds = request.get("repeats", 5)
for i, _ in enumerate(request["candidates"]):
    print(json.dumps({"candidate": i, "status": "compiling"}))
    print(json.dumps({"candidate": i, "status": "ok", "max_rel_err": 0.0}))
    cases = []
    for case in request["cases"]:
        ms = 0.05 * case["rows"]
        cases.append({"rows": case["rows"], "keys": case.get("keys", 0), "wall_min_ms": ms,
                      "wall_median_ms": ms, "cpu_median_ms": ms, "wall_ms": [ms] * rounds})
    print(json.dumps({"candidate": i, "status": "timed", "cases": cases}))
print(json.dumps({"status": "done"}))
