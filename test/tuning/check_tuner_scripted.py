#!/usr/bin/env python3
"""`xfc tune` against a scripted worker: the tuner's own logic, deterministic and fast.

The real worker (tools/xf-tune-worker) compiles and times candidates, so what the tuner does
with the times depends on the machine's noise. Here XF_TUNE_WORKER points at a script that
answers the same protocol (WorkerClient.cpp) at once, with made-up times: every schedule is
slower than the batch's first candidate (the default, the anchor of every batch) by 25 % per
knob it differs in, and all times scale with $XF_FAKE_SCALE. It logs every request it gets.
Checked on examples/tiny.xf at lengths 1 and 32 (each GEMM has a GEMV and a tiled path, the
attention a decode and a prefill path):

1. No batch times the default twice: the search never proposes the anchor as a candidate
   (the attention's decode path has 4 values and a first batch of 4; it used to get the
   default back).
2. With the default fastest everywhere, every path keeps it and no final batch runs; the
   entry still gets its roofline fraction (from the default's times in the path batches; it
   used to be 0), and doubling every time halves it.
3. `--compare` of a database with itself: A / B is exactly 1 on every kernel and length.
4. `--baselines` stay outside the budget: the worker answers the first autoscheduler batch
   only after longer than the whole budget, and every kernel after it still gets a share
   (it used to get none: the baselines' seconds were taken from the kernels still to tune).
5. The budget is a bound: no batch starts after it, a batch that hangs is cut 10 s after it.
6. A bad --budget or --lengths is quoted cut short and escaped.
7. The final A/B: schedules faster than the default by more than the margin are kept, after
   batches of the two alone in both orders; the report and summary give noise and margin.
8. Losses within the noise and exact ties keep the default; noisy batches give one warning
   line.
9. A loaded machine (XF_TUNE_LOADAVG_FILE) gives one warning line.
10. `--compare default` reports tuned vs default per kernel.
11. A worker killed by a signal before its first report (SIGILL: kernels built for features
    the CPU lacks) is an error naming the signal, not a timeout nor defaults timed at 0 ms.

usage: check_tuner_scripted.py --xfc build/bin/xfc
"""

import argparse
import json
import os
import stat
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = os.path.join(ROOT, "examples", "tiny.xf")
failures = []

WORKER = r'''
import json, math, os, random, sys, time
if "--machine" in sys.argv:
    print(json.dumps({"fma_gflops": 100.0, "read_gbs": 10.0, "isa": "scripted", "cpu": "none"}))
    sys.exit(0)
request = json.loads(sys.stdin.read())
if "XF_FAKE_SIGNAL" in os.environ:
    os.kill(os.getpid(), int(os.environ["XF_FAKE_SIGNAL"]))
with open(os.environ["XF_FAKE_LOG"], "a") as log:
    log.write(json.dumps(request) + "\n")
if "XF_FAKE_SLEEP" in os.environ:
    time.sleep(float(os.environ["XF_FAKE_SLEEP"]))
    if sum(1 for _ in open(os.environ["XF_FAKE_LOG"])) >= int(os.environ["XF_FAKE_HANG_AT"]):
        time.sleep(3600)
scale = float(os.environ.get("XF_FAKE_SCALE", "1"))
candidates = request["candidates"]
anchor = candidates[0]
slow = os.environ.get("XF_FAKE_SLOW_BASELINES")
if slow and any("autoscheduler" in c for c in candidates) and not os.path.exists(slow):
    open(slow, "w").close()
    time.sleep(float(os.environ["XF_FAKE_SLOW_SECONDS"]))
# XF_FAKE_FASTER=f: each knob that differs from the default's makes a schedule f faster
# instead of 25 % slower, and XF_FAKE_AB_FACTOR=g makes every non-default schedule g times the
# default in the final check's batches (9 rounds on all lengths): the search flattered them;
# XF_FAKE_NOISE=s: each round's time varies by exp(N(0, s)). The
# default is each kernel's first batch's first candidate (a search batch's anchor): the
# final A/B puts it second in every other batch.
faster = float(os.environ.get("XF_FAKE_FASTER", "0"))
noise = float(os.environ.get("XF_FAKE_NOISE", "0"))
defaults_path = os.environ["XF_FAKE_LOG"] + ".defaults"
defaults = json.load(open(defaults_path)) if os.path.exists(defaults_path) else {}
kernel_key = json.dumps(request["kernel"], sort_keys=True)
if kernel_key not in defaults:
    defaults[kernel_key] = anchor
    json.dump(defaults, open(defaults_path, "w"))
default = defaults[kernel_key]
rounds = request.get("repeats", 5)
final_check = rounds == 9 and len(request["cases"]) > 1


def earlier_final_checks():
    for line in open(os.environ["XF_FAKE_LOG"]):
        r = json.loads(line)
        yield (json.dumps(r["kernel"], sort_keys=True) == kernel_key and
               r.get("repeats") == 9 and len(r["cases"]) > 1)


# The final check's noise is drawn from a stream fixed by the kernel and the batch's place among
# its final-check batches, not by how many requests the wall-clock budget let the search make
# before it: on a loaded machine that count changed the draws, and with them (rarely) the verdict.
rng = random.Random(f"{kernel_key}/{sum(earlier_final_checks())}" if final_check else
                    sum(1 for _ in open(os.environ["XF_FAKE_LOG"])))
for i, c in enumerate(candidates):
    differ = sum(1 for key in set(default) | set(c) if default.get(key) != c.get(key))
    print(json.dumps({"candidate": i, "status": "compiling"}))
    print(json.dumps({"candidate": i, "status": "ok", "max_rel_err": 0.0}))
    factor = (1 - faster) ** differ if faster else 1 + 0.25 * differ
    if differ and "XF_FAKE_AB_FACTOR" in os.environ and final_check:
        factor = float(os.environ["XF_FAKE_AB_FACTOR"])  # the final check's batches
    cases = []
    for case in request["cases"]:
        ms = scale * 50.0 * case["rows"] * factor
        walls = [ms * math.exp(rng.gauss(0, noise)) if noise else ms for _ in range(rounds)]
        cases.append({"rows": case["rows"], "keys": case.get("keys", 0),
                      "wall_min_ms": min(walls), "wall_median_ms": sorted(walls)[rounds // 2],
                      "cpu_median_ms": ms, "wall_ms": walls})
    print(json.dumps({"candidate": i, "status": "timed", "cases": cases}))
print(json.dumps({"status": "done"}))
'''


def expect(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--xfc", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="xf-tune-scripted-") as tmp:
        worker = os.path.join(tmp, "worker")
        with open(worker, "w") as f:
            f.write(f"#!{sys.executable}\n" + WORKER)
        os.chmod(worker, os.stat(worker).st_mode | stat.S_IXUSR)
        # The machine's load as the tuner reads it (/proc/loadavg's format): quiet unless a
        # check says otherwise, so that no run here warns because of the real machine's load.
        quiet, busy = os.path.join(tmp, "quiet-loadavg"), os.path.join(tmp, "busy-loadavg")
        with open(quiet, "w") as f:
            f.write("0.00 0.00 0.00 1/100 1\n")
        with open(busy, "w") as f:
            f.write("9.00 9.00 9.00 10/100 1\n")

        def tune(name, scale, *extra, db=None, env_extra=None, timeout=600):
            log = os.path.join(tmp, name + ".log")
            env = dict(os.environ, XF_TUNE_WORKER=worker, XF_FAKE_LOG=log,
                       XF_FAKE_SCALE=str(scale), XF_TUNE_LOADAVG_FILE=quiet)
            env.update(env_extra or {})
            db = db or os.path.join(tmp, name + ".db")
            report = os.path.join(tmp, name + ".json")
            r = subprocess.run([args.xfc, "tune", TINY, "--lengths", "1,32", "--db", db,
                                "--report", report, "--num-threads", "1", *extra],
                               capture_output=True, text=True, env=env, timeout=timeout)
            print(r.stderr[-1500:])
            expect(r.returncode == 0, f"{name}: xfc tune exits 0 (rc={r.returncode})")
            if r.returncode != 0:
                sys.exit(1)
            requests = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
            return db, json.load(open(report)), requests, r.stderr

        # (10 s budgets: on a machine loaded by other builds, starting the scripted worker
        # ~14 times took most of 5 s, and a run then left kernels unreached.)
        db1, rep1, requests, _ = tune("run1", 1, "--budget", "10s")
        kernels = rep1["kernels"]
        expect(len(kernels) >= 4 and requests, f"the model's kernels were tuned ({len(kernels)})")

        # 1. The anchor is never among a batch's other candidates.
        repeated = [r["kernel"] for r in requests if r["candidates"][0] in r["candidates"][1:]]
        expect(not repeated, f"no batch times the default twice ({len(repeated)} did)")
        decode = [r for r in requests if r["kernel"].startswith("#xf.attention_kernel")
                  and [c["rows"] for c in r["cases"]] == [1]]
        expect(decode and len({json.dumps(c, sort_keys=True) for r in decode
                               for c in r["candidates"]}) == 4,
               "the attention's decode path timed all 4 of its decode_key_tile values")

        # 2. Every path kept the default: no final batch, a roofline fraction all the same.
        entries = {e["kernel"]: e for e in json.load(open(db1))["entries"]}
        expect(all("cases" not in k for k in kernels),
               "every path kept the default, so no final batch ran")
        expect(all(k["schedule"] == entries[k["kernel"]]["schedule"] for k in kernels) and
               all(0 < k["roofline_fraction"] < 1 and
                   entries[k["kernel"]]["roofline_fraction"] == k["roofline_fraction"]
                   for k in kernels),
               "each entry has its default's roofline fraction (report and database) " +
               str([(k["name"], k["roofline_fraction"],
                     entries[k["kernel"]]["roofline_fraction"]) for k in kernels]))
        _, rep2, _, _ = tune("run2", 2, "--budget", "10s")
        r1 = {k["kernel"]: k["roofline_fraction"] for k in kernels}
        r2 = {k["kernel"]: k["roofline_fraction"] for k in rep2["kernels"]}
        expect(r1.keys() == r2.keys() and
               all(abs(r1[k] / r2[k] - 2) < 1e-9 for k in r1 if r2[k] > 0) and all(r2.values()),
               "twice the time, half the roofline fraction")

        # 3. --compare of a database with itself.
        _, cmp, _, _ = tune("compare", 1, "--compare", db1, db=db1)
        expect({k["kernel"] for k in cmp["kernels"]} == set(r1) and
               all(k["a_over_b"] == 1 and [c["rows"] for c in k["cases"]] == [1, 32] and
                   all(c["a_ms"] == c["b_ms"] == c["default_ms"] for c in k["cases"])
                   for k in cmp["kernels"]),
               "--compare of a database with itself: A / B = 1 on every kernel and length")

        # 4. The first kernel's baselines take longer than the whole budget.
        _, rep4, requests4, _ = tune("baselines", 1, "--budget", "10s", "--baselines", env_extra={
            "XF_FAKE_SLOW_BASELINES": os.path.join(tmp, "slow-once"),
            "XF_FAKE_SLOW_SECONDS": "11"})
        shares = [k.get("share_s", -1) for k in rep4["kernels"]]
        expect(len(shares) == len(kernels) and all(s > 0 for s in shares),
               f"after baselines longer than the budget every kernel still gets a share {shares}")
        expect(rep4.get("baselines_s", 0) >= 11 and
               all("baselines" in k for k in rep4["kernels"]),
               f"the report counts the baselines' seconds ({rep4.get('baselines_s')}) apart")
        # 5. The budget is a bound (issue 33: --budget 5s ran 89 s): no batch starts once it is
        # spent, and one running then is cut ProgramTuner::slackSeconds (here 10 s) later.
        # Every batch takes a second and the third never answers: the run ends (it used to
        # wait out the batch's own timeout, 90 s a candidate), says why, and keeps the entry
        # the first two batches made.
        db5, rep5, requests5, err5 = tune("budget", 1, "--budget", "3s", timeout=120, env_extra={
            "XF_FAKE_SLEEP": "1", "XF_FAKE_HANG_AT": "3"})
        expect(len(requests5) <= 3 and "the budget is spent" in err5,
               f"no batch starts after the budget ({len(requests5)} batches)")
        expect(len(json.load(open(db5))["entries"]) >= 1 and len(rep5["kernels"]) >= 1,
               "what was measured within the budget is kept")
        # 6. A bad --budget or --lengths is quoted cut short and escaped (issue 33): no escape
        # sequence reaches the terminal.
        for option in ["--budget", "--lengths"]:
            r = subprocess.run([args.xfc, "tune", TINY, option, "\x1b[2J" + "9" * 10000,
                                "--db", os.path.join(tmp, "bad.db")],
                               capture_output=True, text=True, timeout=60)
            expect(r.returncode != 0 and "\x1b" not in r.stderr and len(r.stderr) < 300 and
                   f"{option} '\\x1b[2J999" in r.stderr, f"a bad {option} is quoted cut short")
        # 7. The final A/B: candidates faster by 10 % per knob and exact times. Each kept
        # entry beat the default in at least two A/B batches of the two alone, in both
        # orders; the report gives the noise (0 here) and the margin (the 1 % minimum).
        db7, rep7, requests7, err7 = tune("faster", 1, "--budget", "6s", env_extra={
            "XF_FAKE_FASTER": "0.1"})
        entries7 = {e["kernel"]: e for e in json.load(open(db7))["entries"]}
        checks = [k["final_check"] for k in rep7["kernels"] if "final_check" in k]
        expect(checks and all(c["kept"] == "tuned" and c["batches"] >= 2 and c["noise"] < 1e-9
                              and abs(c["margin"] - 0.01) < 1e-9 and c["gain"] > 0.01
                              for c in checks),
               f"clear wins are kept after >= 2 A/B batches ({len(checks)} checked)")
        expect(all(entries7[k["kernel"]]["schedule"] == k["final_check"]["schedule"]
                   for k in rep7["kernels"] if "final_check" in k),
               "the database holds each kept candidate")
        # (A kernel's check may be cut at the deadline on a busy machine: there may be more
        # A/B batches than the checks count. Kernels whose requests read alike share a key.)
        pairs = {}
        for r in requests7:
            if len(r["candidates"]) == 2 and r.get("repeats") == 9:
                pairs.setdefault(json.dumps(r["kernel"], sort_keys=True), []).append(r)
        def in_both_orders(rs):
            # The first A/B batch runs the default first; a later one runs it second.
            default = rs[0]["candidates"][0]
            return any(r["candidates"][1] == default for r in rs[1:])
        both_orders = all(in_both_orders(rs) for rs in pairs.values() if len(rs) >= 2)
        batches7 = sum(len(rs) for rs in pairs.values())
        expect(batches7 >= sum(c["batches"] for c in checks) and both_orders,
               f"the A/B batches hold the default and the candidate alone, in both orders "
               f"({batches7} A/B batches, {len(checks)} checks)")
        expect("gain" in err7 and "margin" in err7 and " tuned " in err7,
               "the summary prints gain, noise, margin and what was kept")
        # 8. Candidates that looked faster in the search but are 10 % slower in the final
        # check, whose rounds vary by 30 %: not stored, and the run warns once that the
        # measurements are unreliable (the noise, not the load: quiet here). Then an exact tie:
        # not stored either (the 1 % minimum gain). (At 3 % slower, one kernel in seven was
        # now and then kept by chance in a CI run: the rule's false-win rate there is ~1e-3 a
        # kernel, and the worker's random stream depends on how many batches the budget fit.)
        flattered = {"XF_FAKE_FASTER": "0.1", "XF_FAKE_AB_FACTOR": "1.10"}
        db8, rep8, _, err8 = tune("noisy", 1, "--budget", "6s", env_extra={
            **flattered, "XF_FAKE_NOISE": "0.3"})
        entries8 = {e["kernel"]: e for e in json.load(open(db8))["entries"]}
        checks8 = [k for k in rep8["kernels"] if "final_check" in k]
        kept8 = [k for k in checks8 if not (
            k["final_check"]["kept"] == "default" and
            entries8[k["kernel"]]["schedule"] != k["final_check"]["schedule"] and
            k["final_check"]["noise"] > 0.1)]
        expect(checks8 and not kept8,
               f"losses within the noise keep the default ({len(checks8)} checked)" +
               "".join(f"; not so: {k['kernel']} {json.dumps(k['final_check'])}" for k in kept8))
        warnings8 = [line for line in err8.splitlines() if "measurements are unreliable" in line]
        expect(len(warnings8) == 1 and "A/B noise" in warnings8[0],
               "noisy batches: one warning line")
        expect(not any("measurements are unreliable" in e for e in [err7]),
               "a quiet machine with steady times: no warning")
        db8b, rep8b, _, _ = tune("tie", 1, "--budget", "6s", env_extra={
            "XF_FAKE_FASTER": "0.1", "XF_FAKE_AB_FACTOR": "1.0"})
        entries8b = {e["kernel"]: e for e in json.load(open(db8b))["entries"]}
        checks8b = [k for k in rep8b["kernels"] if "final_check" in k]
        expect(checks8b and all(k["final_check"]["kept"] == "default" and
                                k["final_check"]["why"] ==
                                "not faster than the default by the margin" and
                                entries8b[k["kernel"]]["schedule"] != k["final_check"]["schedule"]
                                for k in checks8b),
               f"exact ties keep the default ({len(checks8b)} checked)")
        # 9. A loaded machine (load average 9 on this machine's cores): one warning line.
        _, _, _, err9 = tune("loaded", 1, "--budget", "2s", env_extra={
            "XF_TUNE_LOADAVG_FILE": busy})
        warnings9 = [line for line in err9.splitlines() if "measurements are unreliable" in line]
        expect(len(warnings9) == 1 and "other load" in warnings9[0],
               "a loaded machine: one warning line naming the load")
        # 10. --compare default: the final database against the default, per kernel.
        _, cmp10, _, err10 = tune("compare-default", 1, "--compare", "default", db=db7,
                                  env_extra={"XF_FAKE_FASTER": "0.1"})
        tuned7 = {k["kernel"] for k in rep7["kernels"]
                  if k.get("final_check", {}).get("kept") == "tuned"}
        expect({k["kernel"] for k in cmp10["kernels"]} == set(entries7) and
               all(k["a_over_default"]["reads"] == ("faster" if k["kernel"] in tuned7
                                                    else "same within the noise")
                   and k["b_schedule"] == "default" for k in cmp10["kernels"]),
               "--compare default: tuned vs default per kernel (faster where kept)")
        expect(err10.count("A / default") == len(cmp10["kernels"]),
               "--compare default prints A / default per kernel")

        # 11. A worker killed by SIGILL before it reports: one error naming the signal.
        env = dict(os.environ, XF_TUNE_WORKER=worker, XF_FAKE_LOG=os.path.join(tmp, "ill.log"),
                   XF_TUNE_LOADAVG_FILE=quiet, XF_FAKE_SIGNAL="4")
        r = subprocess.run([args.xfc, "tune", TINY, "--lengths", "1,32", "--budget", "10s",
                            "--db", os.path.join(tmp, "ill.db"), "--num-threads", "1"],
                           capture_output=True, text=True, env=env, timeout=600)
        expect(r.returncode != 0 and "crashed (Illegal instruction) before its first report"
               in r.stderr and "timeout" not in r.stderr,
               f"a worker killed by SIGILL: an error naming it (rc={r.returncode}, "
               f"{r.stderr.strip().splitlines()[-1:] if r.stderr.strip() else 'no stderr'})")
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
