#!/usr/bin/env python3
"""--serve under concurrent clients: throughput and latency with 1, 4 and 16 clients, in one run.

1. Compiles examples/gpt2.xf (GPT-2 small; or takes --exe) and starts it as a server with
   random weights: `gpt2 --random-weights 1 --serve --port 0 --batch 16 --threads T --eos none`
   (--eos none: every request generates exactly max_tokens).
2. For each client count C (--clients, default 1,4,16): C threads, each sending --requests
   completions one after another (a prompt of --prompt-tokens random ids, --max-tokens new
   tokens, greedy) over http.client; a warm-up request first. Records each request's latency
   (send to last byte) and the wall time of the whole round.
3. Prints, per C: generated tokens/s over the round, requests/s, latency p50/p99, and the
   throughput ratio to one client. Ratios only; nothing is asserted.
4. --minilm: the same for POST /v1/embeddings on examples/minilm.xf (random weights, one
   sentence-length input of --embed-tokens ids per request).

usage: run_serve.py [--exe gpt2] [--threads 2] [--clients 1,4,16] [--requests 4]
                    [--prompt-tokens 32] [--max-tokens 32] [--minilm [--minilm-exe minilm]]
"""
import argparse
import concurrent.futures
import http.client
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import benchlib  # noqa: E402


def start(cmd):
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    line = ""
    while "http://" not in line:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            sys.exit(f"the server did not start: {cmd}")
    return proc, int(line.split("http://")[1].split(":")[1].split()[0])


def post(port, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        start = time.perf_counter()
        c.request("POST", path, body=json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = json.loads(r.read())
        if r.status != 200:
            sys.exit(f"{path}: {r.status} {data}")
        return time.perf_counter() - start, data
    finally:
        c.close()


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def rounds(port, path, make_body, clients, requests, units):
    """units(response) -> generated tokens (or inputs) in it."""
    post(port, path, make_body(10**6))  # warm-up
    rows = []
    for c in clients:
        latencies, done = [], 0

        def client(k):
            out = []
            for r in range(requests):
                out.append(post(port, path, make_body(k * 1000 + r)))
            return out

        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(c) as pool:
            for results in pool.map(client, range(c)):
                for latency, data in results:
                    latencies.append(latency)
                    done += units(data)
        wall = time.perf_counter() - start
        rows.append((c, done / wall, c * requests / wall, statistics.median(latencies),
                     percentile(latencies, 99)))
    return rows


def report(title, unit, rows):
    print(f"\n{title} (load {benchlib.loadavg()})")
    print(f"| clients | {unit}/s | requests/s | latency p50 (s) | p99 (s) | throughput vs 1 |")
    print("|---|---|---|---|---|---|")
    for c, rate, rps, p50, p99 in rows:
        print(f"| {c} | {rate:.1f} | {rps:.2f} | {p50:.3f} | {p99:.3f} | "
              f"{rate / rows[0][1]:.2f}x |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", help="a compiled examples/gpt2.xf (default: compile one)")
    ap.add_argument("--build", default=str(benchlib.ROOT / "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--requests", type=int, default=4, help="per client")
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--minilm", action="store_true")
    ap.add_argument("--minilm-exe")
    ap.add_argument("--embed-tokens", type=int, default=24)
    ap.add_argument("--vocab", type=int, default=50257, help="the --exe model's vocabulary")
    a = ap.parse_args()
    clients = [int(x) for x in a.clients.split(",")]
    places = str(max(clients))
    work = pathlib.Path(tempfile.mkdtemp(prefix="xf-bench-serve-"))
    xfc = str(pathlib.Path(a.build) / "bin" / "xfc")

    exe = a.exe
    if not exe:
        exe = str(work / "gpt2")
        subprocess.run([xfc, str(benchlib.ROOT / "examples" / "gpt2.xf"), "-o", exe], check=True)
    proc, port = start([exe, "--random-weights", "1", "--serve", "--port", "0", "--batch", places,
                        "--threads", str(a.threads), "--eos", "none"])
    try:
        def body(seed):
            ids = [int(x) % a.vocab
                   for x in benchlib.random_tokens(seed, a.prompt_tokens).split(",")]
            return {"prompt": ids, "max_tokens": a.max_tokens}
        rows = rounds(port, "/v1/completions", body, clients, a.requests,
                      lambda d: d["usage"]["completion_tokens"])
    finally:
        proc.terminate()
        err = proc.communicate(timeout=600)[1]
    report(f"GPT-2 small (random weights) --serve, prompts of {a.prompt_tokens} tokens, "
           f"{a.max_tokens} new tokens each, {a.requests} requests per client, up to {places} "
           f"decoding together, {a.threads} threads", "tokens", rows)
    print("server:", [x for x in err.splitlines() if "stopped;" in x])

    if a.minilm:
        exe = a.minilm_exe
        if not exe:
            exe = str(work / "minilm")
            subprocess.run([xfc, str(benchlib.ROOT / "examples" / "minilm.xf"), "-o", exe],
                           check=True)
        proc, port = start([exe, "--random-weights", "1", "--serve", "--port", "0", "--batch",
                            "32", "--threads", str(a.threads), "--normalize"])
        try:
            def embed(seed):
                ids = [int(x) % 30522 for x in
                       benchlib.random_tokens(seed, a.embed_tokens).split(",")]
                return {"input": ids}
            rows = rounds(port, "/v1/embeddings", embed, clients, a.requests * 8,
                          lambda d: len(d["data"]))
        finally:
            proc.terminate()
            err = proc.communicate(timeout=600)[1]
        report(f"all-MiniLM-L6-v2 shape (random weights) --serve, one input of "
               f"{a.embed_tokens} tokens per request, {a.requests * 8} requests per client, "
               f"{a.threads} threads", "inputs", rows)
        print("server:", [x for x in err.splitlines() if "stopped;" in x])


if __name__ == "__main__":
    main()
