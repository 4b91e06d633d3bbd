#!/usr/bin/env python3
"""`xfc tune` end to end on examples/tiny.xf, then the database as the compiler reads it.

1. `xfc tune tiny.xf --budget 20s --db DB`, run again while kernels are left (a run ends with
   its budget; the next starts with the kernels not reached), writes an entry (a schedule,
   costs, trials) for every distinct kernel the model compiles to (as listed by --report).
2. `xfc tiny.xf --tuning-db DB -o exe` uses them (--emit=kernels marks each kernel xf.tuned) and
   the executable matches the oracle (test/e2e/check_examples.py).
   Each kernel's final A/B reports its noise and margin, and the entry holds the candidate
   exactly where the check kept it (structure only: no speed is asserted).
3. A re-run resumes: the recorded trials are kept and new ones are added. `--compare` times the
   first run's schedules beside the resumed run's, per kernel and length, and `--compare
   default` the final database against the default.
4. Edited databases give the documented diagnostics: an entry for another target (warning, the
   default schedule), an unknown kernel (warning), a truncated file (error naming it), an
   illegal schedule (error with the verifier's message), an explicit --tuning-db that does not
   exist (error). No timing is asserted.

usage: check_tuner.py --xfc build/bin/xfc
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = os.path.join(ROOT, "examples", "tiny.xf")
failures = []
# The tools' own output, printed after the checks: a CI log that keeps only the head of a
# test's output then shows every ok/FAIL line.
transcript = []
READS = ("faster", "slower", "same within the noise")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def expect(cond, what, detail=""):
    """One check; a failure prints `detail` (what the tool said) right under it."""
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)
        if detail:
            print("      " + str(detail).strip().replace("\n", "\n      "), flush=True)


def said(r):
    """What a run left for a failure's detail: its exit status and the tail of both streams."""
    return f"exit status {r.returncode}\nstderr: {r.stderr[-1500:]}\nstdout: {r.stdout[-300:]}"


def keep(text):
    transcript.append(text)


def compare_summary(rep, stderr):
    """Per kernel of a --compare report: rounds, reads and per-length times; then the log."""
    lines = [f"{k.get('kernel')}: A/default {k.get('a_over_default')} a_over_b {k.get('a_over_b')}"
             f" cases {k.get('cases')}" for k in rep.get("kernels", [])]
    return "\n".join(lines + [stderr[-2500:]])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--xfc", required=True)
    p.add_argument("--budget", default="20s")
    args = p.parse_args()
    xfc = args.xfc
    with tempfile.TemporaryDirectory(prefix="xf-tune-") as tmp:
        db = os.path.join(tmp, "sub", "tuning.db")  # the parent is created
        report = os.path.join(tmp, "report.json")
        # The budget is a bound (docs/tuning.md): a run may end before the last kernel, and the
        # next run starts with the kernels the database has no entry for. Runs until every
        # kernel has one (each kernel's report from the run that tuned it last).
        reports = {}
        for attempt in range(8):
            r = run([xfc, "tune", TINY, "--budget", args.budget, "--db", db, "--report", report,
                     "--lengths", "1,32"])
            keep(r.stderr[-3000:])
            if r.returncode != 0:
                break
            rep = json.load(open(report))
            reports.update({k["kernel"]: k for k in rep["kernels"]})
            total = int(r.stderr.split("xfc tune: ", 1)[1].split(" kernels", 1)[0])
            if len(reports) >= total:
                break
        expect(r.returncode == 0, f"xfc tune exits 0 (rc={r.returncode})", r.stderr[-3000:])
        if r.returncode != 0:
            return
        expect(len(reports) == total, f"every kernel reached in {attempt + 1} run(s) "
                                      f"({len(reports)} of {total})")
        data = json.load(open(db))
        rep["kernels"] = list(reports.values())
        kernels = {k["kernel"] for k in rep["kernels"]}
        entries = {e["kernel"]: e for e in data["entries"]}
        expect(len(kernels) >= 4, f"the report lists the model's kernels ({len(kernels)})")
        expect(kernels == set(entries), "the database has an entry for every kernel")
        expect(all(e["schedule"].startswith("#xf.") and e["cost_ms"] > 0 and e["trials"]
                   for e in entries.values()), "every entry has a schedule, a cost and trials")
        trials_before = sum(len(e["trials"]) for e in entries.values())
        # Each code path searched on its own lengths (docs/tuning.md): at lengths 1 and 32 a
        # GEMM has a GEMV path (1) and a tiled one (32), an attention a decode and a prefill.
        want = {"gemm": {"gemv": [1], "gemm": [32]}, "attention": {"decode": [1], "prefill": [32]}}
        paths_ok = all({p["path"]: p["lengths"] for p in k["paths"]} ==
                       want["gemm" if k["kernel"].startswith("gemm") else "attention"]
                       for k in rep["kernels"])
        expect(paths_ok, "the report lists each kernel's paths with the lengths that take them")
        expect(all(t.get("path") in want["gemm" if e["kernel"].startswith("gemm") else "attention"]
                   for e in entries.values() for t in e["trials"]),
               "every trial names the path it was timed on")
        expect(all(sorted(c["rows"] for c in k.get("cases", [])) in ([], [1, 32])
                   for k in rep["kernels"]),
               "the final check's per-length rows cover all lengths")
        # The final A/B (docs/tuning.md): structure only, never speed. An entry holds a
        # schedule other than the default only where its check kept it.
        checks = [k for k in rep["kernels"] if "final_check" in k]
        expect(all(c["final_check"]["kept"] in ("tuned", "default") and
                   c["final_check"]["batches"] >= 1 and c["final_check"]["noise"] >= 0 and
                   c["final_check"]["margin"] >= 0.0099 and
                   (c["final_check"]["kept"] == "tuned") ==
                   (entries[c["kernel"]]["schedule"] == c["final_check"]["schedule"]) and
                   (c["final_check"]["kept"] == "tuned" or c["final_check"]["why"])
                   for c in checks),
               f"each final check reports noise and margin, and the entry follows it "
               f"({len(checks)} checked, {sum(c['final_check']['kept'] == 'tuned' for c in checks)} kept)")

        # 2. Compile with it: every kernel tuned, and the numbers still right.
        r = run([xfc, TINY, "--tuning-db", db, "--emit=kernels"])
        tuned = r.stdout.count("xf.tuned")
        ops = r.stdout.count("xf.gemm ") + r.stdout.count("xf.attention ")
        expect(r.returncode == 0 and tuned == ops and ops > 0,
               f"--emit=kernels marks every kernel xf.tuned ({tuned}/{ops})")
        r = run([sys.executable, os.path.join(ROOT, "test", "e2e", "check_examples.py"),
                 "--xfc", xfc, "--model", "tiny", f"--xfc-arg=--tuning-db={db}"])
        keep(r.stdout)
        expect(r.returncode == 0, "the tuned executable matches the oracle", r.stdout + r.stderr)

        exe = os.path.join(tmp, "tiny-tuned")
        r = run([xfc, TINY, "--tuning-db", db, "-o", exe])
        r = r if r.returncode else run([exe, "--random-weights", "1", "--tokens", "1,2,3",
                                        "--profile"])
        expect(r.returncode == 0 and "gemm tuned" in r.stdout + r.stderr,
               "--profile says which kernels are tuned", said(r))

        # 3. Resume: earlier trials stay, new ones are added.
        first = os.path.join(tmp, "first.db")
        with open(db) as f, open(first, "w") as g:
            g.write(f.read())
        # (The budget as the first runs': at 6 s, on a machine loaded by other builds, the
        # machine's peak measurement alone could spend it before the first batch.)
        r = run([xfc, "tune", TINY, "--budget", args.budget, "--db", db, "--lengths", "1,32"])
        keep(r.stderr[-1500:])
        data = json.load(open(db))
        trials_after = sum(len(e["trials"]) for e in data["entries"])
        expect(r.returncode == 0 and trials_after > trials_before,
               f"a second run resumes ({trials_before} -> {trials_after} trials)", r.stderr[-2000:])

        # --compare: both databases' schedules timed side by side, per kernel and length.
        compared = os.path.join(tmp, "compare.json")
        r = run([xfc, "tune", TINY, "--db", first, "--compare", db, "--lengths", "1,32",
                 "--report", compared])
        keep(r.stderr[-2000:])
        rep = json.load(open(compared)) if r.returncode == 0 else {"kernels": []}
        expect(r.returncode == 0 and {k["kernel"] for k in rep["kernels"]} == kernels and
               all(k["a_over_b"] > 0 and [c["rows"] for c in k["cases"]] == [1, 32] and
                   all(c["a_ms"] > 0 and c["b_ms"] > 0 and c["default_ms"] > 0
                       for c in k["cases"]) for k in rep["kernels"]) and
               r.stderr.count("A / default") == len(kernels) and
               all(k["a_over_default"]["reads"] in READS and k["a_over_default"]["noise"] >= 0
                   for k in rep["kernels"]),
               "--compare times both databases' schedules on every kernel and length",
               compare_summary(rep, r.stderr))
        # --compare default: the final database's tuned vs default, per kernel.
        r = run([xfc, "tune", TINY, "--db", db, "--compare", "default", "--lengths", "1,32",
                 "--report", compared])
        keep(r.stderr[-2000:])
        rep = json.load(open(compared)) if r.returncode == 0 else {"kernels": []}
        expect(r.returncode == 0 and {k["kernel"] for k in rep["kernels"]} == kernels and
               all(k["b_schedule"] == "default" and k["a_over_default"]["reads"] in READS and
                   k["a_over_default"]["rounds"] >= 6 for k in rep["kernels"]) and
               r.stderr.count("A / default") == len(kernels),
               "--compare default reports tuned vs default on every kernel",
               compare_summary(rep, r.stderr))
        missing = os.path.join(tmp, "missing.db")
        r = run([xfc, "tune", TINY, "--db", first, "--compare", missing])
        expect(r.returncode != 0 and missing in r.stderr and r.stderr.count("\n") == 1,
               "--compare with a missing database: one error naming it", said(r))

        # 4. Edited databases.
        def variant(name, edit):
            d = json.load(open(db))
            edit(d)
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                json.dump(d, f)
            return path

        def other_target(d):
            d["entries"][0]["target"] = "arm-64-linux"
        path = variant("other-target.db", other_target)
        r = run([xfc, TINY, "--tuning-db", path, "--emit=kernels"])
        expect(r.returncode == 0 and "1 kernel(s) were tuned only for another target" in r.stderr,
               "an entry for another target: a warning, the default schedule", said(r))

        def unknown(d):
            d["entries"].append(dict(d["entries"][0], kernel="conv2d k=3"))
        path = variant("unknown.db", unknown)
        r = run([xfc, TINY, "--tuning-db", path, "--emit=kernels"])
        expect(r.returncode == 0 and "ignoring the entry for unknown kernel 'conv2d k=3'" in r.stderr,
               "an unknown kernel: a warning", said(r))

        def illegal(d):
            e = d["entries"][0]
            e["schedule"] = e["schedule"].replace("<", "<bogus = 1, ", 1)
        path = variant("illegal.db", illegal)
        r = run([xfc, TINY, "--tuning-db", path, "-o", os.path.join(tmp, "exe")])
        expect(r.returncode != 0 and "holds an illegal schedule" in r.stderr and path in r.stderr,
               "an illegal schedule: an error naming the file", said(r))

        truncated = os.path.join(tmp, "truncated.db")
        with open(db) as f, open(truncated, "w") as g:
            g.write(f.read()[:300])
        r = run([xfc, TINY, "--tuning-db", truncated, "-o", os.path.join(tmp, "exe")])
        expect(r.returncode != 0 and truncated in r.stderr and "error" in r.stderr,
               "a truncated database: an error naming the file", said(r))
        expect(not os.path.exists(os.path.join(tmp, "exe")), "no executable is left behind")

        r = run([xfc, TINY, "--tuning-db", os.path.join(tmp, "absent.db"), "--emit=kernels"])
        expect(r.returncode != 0 and "absent.db" in r.stderr,
               "an explicit --tuning-db that does not exist: an error", said(r))

        # Bad command lines.
        r = run([xfc, "tune", TINY, "--budget", "soon", "--db", db])
        expect(r.returncode != 0 and "--budget" in r.stderr, "a bad --budget is refused")
        r = run([xfc, "tune", TINY, "--lengths", "0,x", "--db", db])
        expect(r.returncode != 0 and "--lengths" in r.stderr, "bad --lengths are refused")
        r = run([xfc, TINY, "--budget", "1m"])
        expect(r.returncode != 0 and "xfc tune" in r.stderr, "tune options need `xfc tune`")
    if failures:
        print(f"{len(failures)} check(s) failed: " + "; ".join(failures))
    print("\n--- the tools' output ---\n" + "\n".join(transcript))
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
