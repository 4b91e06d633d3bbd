#!/usr/bin/env python3
"""--serve's load-and-fault run: 64 good clients, calm and beside 16 hostile ones (issue 33).

1. Compiles examples/gpt2.xf at --spec (default a 4-layer d_e=256 GPT-2 of 256 positions) and
   starts it as a server with random weights, --batch 32, --eos none (every request generates
   exactly --max-tokens), --request-timeout 3 (slowloris clients are cut sooner).
2. Calm: --good clients each send --requests completions (half streamed) one after another.
3. Faulted: a fresh server; the same good clients while --hostile clients cycle through
   slowloris heads, 5 MiB bodies (declared and chunked), 300-range requests, disconnects
   mid-request and mid-stream, and garbage (test/e2e/check_serve_load.py).
4. Prints, for both: good requests answered in full, p50/p99 latency (send to last byte), the
   server's peak resident memory (VmHWM) and whether SIGTERM ended it with 0; then the faulted
   p99 over the calm one and the hostile requests' outcomes. Nothing is asserted here (ctest
   e2e-serve-load asserts the answers at a small scale); docs/serving.md records the figures.

usage: run_serve_load.py --xfc build/bin/xfc [--good 64] [--hostile 16] [--requests 8]
                         [--max-tokens 32] [--spec L=4,...]
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "e2e"))
import check_serve_load as load  # noqa: E402


def one_run(exe, args, hostile):
    server = load.start(exe, 32)
    try:
        tally = load.load_run(server, args.good, hostile, args.requests, args.max_tokens)
        status, health = load.wait_idle(server)
        rss = load.peak_rss_mib(server.proc.pid)
        code, _ = server.stop()
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    lat = tally.latencies
    return {"good_answered": len(lat), "good_sent": args.good * args.requests,
            "p50_ms": round(load.percentile(lat, 50) * 1e3, 1),
            "p99_ms": round(load.percentile(lat, 99) * 1e3, 1),
            "peak_rss_mib": round(rss, 1), "health_after": status, "exit_on_sigterm": code,
            "problems": tally.bad[:10], "hostile": tally.hostile}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--good", type=int, default=64)
    ap.add_argument("--hostile", type=int, default=16)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--spec", default="L=4,H=4,d_e=256,d_mlp=1024,N_V=300,l_max=256")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xf-serve-load-bench-") as tmp:
        exe = load.build_gpt2(args.xfc, tmp, args.spec)
        calm = one_run(exe, args, 0)
        faulted = one_run(exe, args, args.hostile)
    report = {"spec": args.spec, "good": args.good, "hostile": args.hostile,
              "requests_per_client": args.requests, "max_tokens": args.max_tokens,
              "load_average": os.getloadavg(), "calm": calm, "faulted": faulted,
              "p99_ratio": round(faulted["p99_ms"] / calm["p99_ms"], 2),
              "p50_ratio": round(faulted["p50_ms"] / calm["p50_ms"], 2)}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
