#!/usr/bin/env python3
"""Protocol test of xf-tune-worker (tools/xf-tune-worker).

Runs the worker on a small GEMM (fp32, bias + gelu_tanh), a transposed bf16
GEMM (bf16 activations, residual), GEMMs on ggml weight blocks (Q4_1 with
SwiGLU, Q8_0) and a small causal attention, each with two
xf candidates, one illegal candidate and one Adams2019 baseline, and checks
the JSON lines: every candidate announced before its result, the good ones
"ok" within tolerance then "timed" with one entry per case (every round's time in it), the illegal one
an error and never timed, "done" last. Then malformed requests: one
{"status": "error"} line and exit code 2. No timing assertions.

usage: worker_test.py PATH/TO/xf-tune-worker
"""

import json
import subprocess
import sys

WORKER = sys.argv[1]
FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message)
    return condition


def run(request, stdin=True):
    """Runs the worker on `request` (via stdin); returns (exit code, parsed lines)."""
    text = request if isinstance(request, str) else json.dumps(request)
    proc = subprocess.run([WORKER, "-"], input=text, capture_output=True, text=True, timeout=600)
    lines = []
    for raw in proc.stdout.splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            check(False, "not a JSON line: %r" % raw)
    if proc.stderr.strip():
        print("  stderr: " + proc.stderr.strip()[:2000])
    return proc.returncode, lines


def gemm(k, n, **params):
    """A GEMM's description (#xf.gemm_kernel), with a schedule valid on AVX2 and AVX-512:
    its K block is all of K up to 1536, rounded up to even (bf16 pairs), as the default one."""
    schedule = ("#xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = %d, "
                "pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, "
                "gemv_rows_per_pass = 16, gemv_tasks = 0>" % min(k + k % 2, 1536))
    fields = ["k = %d" % k, "n = %d" % n] + ["%s = %s" % kv for kv in params.items()]
    return "#xf.gemm_kernel<%s, schedule = %s>" % (", ".join(fields), schedule)


def attention(heads, dk, **params):
    """An attention's description (#xf.attention_kernel): dv = dk, scale 1/sqrt(dk)."""
    fields = ["heads = %d" % heads, "kv_heads = %d" % params.pop("kv_heads", heads),
              "dk = %d" % dk, "dv = %d" % dk, "scale = %r" % (dk ** -0.5)]
    fields += ["%s = %s" % kv for kv in params.items()]
    return ("#xf.attention_kernel<%s, schedule = #xf.attention_schedule<query_block = 64, "
            "key_block = 32, row_tile = 2, decode_key_tile = 4>>" % ", ".join(fields))


def check_batch(name, kernel, cases, good, bad, tolerance, baseline_ok=True):
    """`good` candidates must be ok and timed; `bad` ones rejected, not timed. The Adams2019
    baseline comes last: good, or (baseline_ok False) rejected."""
    print("== " + name)
    candidates = good + bad + [{"autoscheduler": "Adams2019"}]
    good_ids = list(range(len(good))) + ([len(candidates) - 1] if baseline_ok else [])
    bad_ids = list(range(len(good), len(candidates) - (1 if baseline_ok else 0)))
    request = {"target": "host", "threads": 2, "repeats": 3, "max_seconds": 30,
               "kernel": kernel, "cases": cases, "candidates": candidates}
    code, lines = run(request)
    for line in lines:
        print("  " + json.dumps(line)[:300])
    check(code == 0, "%s: exit code %d" % (name, code))
    if not check(lines and lines[-1] == {"status": "done"}, name + ": last line is not done"):
        return

    # Compile phase: "compiling" then the result, candidate by candidate.
    results = {}
    for i in range(len(candidates)):
        check(lines[2 * i] == {"candidate": i, "status": "compiling"},
              "%s: line %d should announce candidate %d" % (name, 2 * i, i))
        result = lines[2 * i + 1]
        check(result.get("candidate") == i, "%s: result line of candidate %d" % (name, i))
        results[i] = result
    for i in good_ids:
        r = results[i]
        check(r.get("status") == "ok", "%s: candidate %d: %s" % (name, i, r))
        err = r.get("max_rel_err")
        check(isinstance(err, float) and 0 <= err <= tolerance,
              "%s: candidate %d max_rel_err %r > %g" % (name, i, err, tolerance))
        check(r.get("tolerance") == tolerance, "%s: candidate %d tolerance" % (name, i))
        check(r.get("compile_s", -1) >= 0, "%s: candidate %d compile_s" % (name, i))
    for i in bad_ids:
        r = results[i]
        check(r.get("status") in ("invalid", "compile_error"),
              "%s: candidate %d should be rejected: %s" % (name, i, r))
        check(bool(r.get("error")), "%s: candidate %d has no error message" % (name, i))

    # Timing phase: one "timed" line per good candidate, in order.
    timed = lines[2 * len(candidates):-1]
    check([t.get("candidate") for t in timed] == good_ids,
          "%s: timed candidates %s, expected %s" % (name, [t.get("candidate") for t in timed],
                                                    good_ids))
    for t in timed:
        check(t.get("status") == "timed", "%s: %s" % (name, t))
        check(t.get("rounds", 0) >= 1, "%s: no rounds" % name)
        entries = t.get("cases", [])
        check(len(entries) == len(cases), "%s: candidate %s case count" % (name, t.get("candidate")))
        for case, entry in zip(cases, entries):
            check(entry.get("rows") == case["rows"], "%s: rows of %s" % (name, entry))
            check(entry.get("keys") == case.get("keys", case["rows"] if kernel.startswith("#xf.attention_kernel") else 0),
                  "%s: keys of %s" % (name, entry))
            for key in ("wall_min_ms", "wall_median_ms", "cpu_median_ms", "gflops", "gbs"):
                check(isinstance(entry.get(key), float) and entry[key] > 0,
                      "%s: %s of %s" % (name, key, entry))
            check(entry["wall_min_ms"] <= entry["wall_median_ms"], "%s: min > median" % name)
            # Every round's time, for the tuner's paired A/B: one per round, the minimum
            # among them.
            walls = entry.get("wall_ms", [])
            check(len(walls) == t.get("rounds") and all(w > 0 for w in walls) and
                  min(walls) == entry["wall_min_ms"], "%s: wall_ms of %s" % (name, entry))


check_batch(
    "gemm fp32 bias gelu_tanh",
    gemm(64, 96, weight="kn", bias="true", activation="gelu_tanh"),
    [{"rows": 1}, {"rows": 7}, {"rows": 33}],
    good=[{}, {"tile_rows": 4, "k_block": 16, "pack_weights": False, "rows_per_task": 8,
               "gemv_rows_below": 2, "gemv_rows_per_pass": 4, "gemv_tasks": 3}],
    bad=[{"tile_cols": 17}, {"tile_colz": 48}],
    tolerance=1e-4)

check_batch(
    "gemm bf16 transposed",
    gemm(70, 50, weight="nk", storage="bf16", bf16_inputs="true", residual="true",
         activation="gelu_erf"),
    [{"rows": 1}, {"rows": 9}],
    good=[{}, {"tile_rows": 3, "k_block": 32, "gemv_rows_below": 0}],
    bad=[{"k_block": 33}],
    tolerance=2e-2)

check_batch(
    "gemm q4_1 blocks swiglu",
    gemm(96, 40, weight="nk", storage="q4_1", activation="swiglu"),
    [{"rows": 1}, {"rows": 3}, {"rows": 17}],
    good=[{}, {"tile_rows": 2, "k_block": 64, "rows_per_task": 8, "gemv_rows_per_pass": 8}],
    bad=[{"tile_cols": 5}],
    tolerance=1e-4)

check_batch(
    "gemm q8_0 blocks",
    gemm(64, 33, weight="nk", storage="q8_0", bias="true"),
    [{"rows": 2}, {"rows": 9}],
    good=[{}, {"k_block": 32, "pack_weights": False}],
    bad=[],
    tolerance=1e-4)

check_batch(
    "attention causal",
    attention(2, 16, causal="true"),
    [{"rows": 1, "keys": 9}, {"rows": 37}, {"rows": 20, "keys": 5}],
    good=[{}, {"query_block": 16, "key_block": 32, "row_tile": 2, "decode_key_tile": 2}],
    bad=[{"key_block": 0}],
    tolerance=1e-4)

# Rotary positions fused into the attention (xf-fuse-rope-attention): both pairings, grouped
# queries, keys rotated by the kernel or arriving rotated (a KV cache). The unscheduled
# baseline has no rotation, so it is refused rather than timed as another kernel.
for rope, rope_keys in (("adjacent", True), ("halves", False)):
    check_batch(
        f"attention rope {rope} keys {'rotated here' if rope_keys else 'given rotated'}",
        attention(4, 16, kv_heads=2, causal="true", rope=rope, rope_base="500.0",
                  rope_keys="true" if rope_keys else "false"),
        [{"rows": 1, "keys": 40}, {"rows": 37}, {"rows": 9, "keys": 30}],
        good=[{}, {"query_block": 16, "key_block": 32, "row_tile": 2, "decode_key_tile": 2}],
        bad=[],
        tolerance=1e-4, baseline_ok=False)

print("== malformed requests")
GEMM = gemm(8, 8, weight="kn")
errors = []
for bad in ["not json", "[]", json.dumps({"kernel": GEMM, "cases": [{"rows": 1}]}),
            json.dumps({"kernel": gemm(1 << 30, 8, weight="kn"), "cases": [{"rows": 1}],
                        "candidates": [{}]}),
            json.dumps({"kernel": GEMM, "cases": [{"rows": 0}], "candidates": [{}]}),
            # The old protocol's object, and attributes that are no kernel description.
            json.dumps({"kernel": {"kind": "gemm", "K": 8, "N": 8}, "cases": [{"rows": 1}],
                        "candidates": [{}]}),
            json.dumps({"kernel": "#xf.loop_schedule<rows_per_task = 1, vector_bits = 0>",
                        "cases": [{"rows": 1}], "candidates": [{}]}),
            json.dumps({"kernel": GEMM + " trailing", "cases": [{"rows": 1}], "candidates": [{}]}),
            json.dumps({"target": "nonsense", "kernel": GEMM, "cases": [{"rows": 1}],
                        "candidates": [{}]}),
            json.dumps({"kernel": GEMM, "cases": [{"rows": 1}], "candidates": [{}], "typo": 1}),
            json.dumps({"kernel": attention(2, 8, rope="spiral"), "cases": [{"rows": 1}],
                        "candidates": [{}]}),
            json.dumps({"kernel": attention(2, 7, rope="halves"), "cases": [{"rows": 1}],
                        "candidates": [{}]}),
            json.dumps({"kernel": attention(2, 8, causal="true", batched_decode="true"),
                        "cases": [{"rows": 1}], "candidates": [{}]}),
            json.dumps({"kernel": gemm(8, 8, weight="nk", storage="q5_k"),
                        "cases": [{"rows": 1}], "candidates": [{}]}),
            json.dumps({"kernel": gemm(8, 8, weight="kn", packed="true"),
                        "cases": [{"rows": 1}], "candidates": [{}]}),
            # Blocks run along K of an [N, K] weight: K = 8 is not a whole block.
            json.dumps({"kernel": gemm(8, 8, weight="nk", storage="q4_0"),
                        "cases": [{"rows": 1}], "candidates": [{}]})]:
    code, lines = run(bad)
    check(code == 2, "malformed %r: exit code %d" % (bad[:60], code))
    check(len(lines) == 1 and lines[0].get("status") == "error" and lines[0].get("error"),
          "malformed %r: lines %s" % (bad[:60], lines))
    errors.append(lines[0].get("error", "") if lines else "")
# The kernel's description is checked by the dialect's parser and verifier, then by the
# worker's own bounds: each malformed description is refused for its own reason.
for expected in ["K = 1073741824, N = 8 exceed", "must be a kernel description",
                 "not a kernel description", "unexpected text after the description",
                 "expected one of [adjacent, halves]", "rope needs an even dk",
                 "batched_decode, half_key_values and segmented kernels are not timed",
                 "WeightStorage to be one of", "packed = true: the worker packs",
                 "a weight of q4_0 blocks needs weight = nk"]:
    check(any(expected in e for e in errors), "no error says %r: %s" % (expected, errors))

if FAILURES:
    print("%d failure(s)" % len(FAILURES))
    sys.exit(1)
print("all passed")
