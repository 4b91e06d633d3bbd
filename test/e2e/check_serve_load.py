#!/usr/bin/env python3
"""--serve under load and faults: well-behaved clients while hostile ones run (issue 33, item 7).

Good clients each send a fixed number of completions (greedy, half streamed, prompts of ids)
over keep-alive connections and check every reply: 200, well-formed JSON or server-sent events
ending in [DONE], the number of tokens asked for. Meanwhile hostile clients cycle through:
  slowloris   a request head trickled a byte every 0.2 s (the server must cut it: 408 or close)
  oversized   Content-Length 5 MiB (413 before the body), a chunked body past 4 MiB (413)
  range       a good request with 300 byte ranges (200, the whole JSON)
  disconnect  a non-streamed request, closed at once; a stream closed after its first event;
              half a body, then closed
  garbage     bytes that are not HTTP (400)
Every request that expects an answer must get the expected one. At the end /health answers
with nothing running, and one SIGTERM ends the server with exit 0. Bounded: every socket has a
timeout, the whole run a deadline; loopback only. Nothing is timed as an assertion: the
latencies (p50/p99) and the server's peak resident memory are reported, and the full run
(test/bench/run_serve_load.py: 64 good + 16 hostile clients against a calm run) records them
in docs/serving.md.

usage: check_serve_load.py --xfc build/bin/xfc [--good 8] [--hostile 4] [--requests 12]
"""

import argparse
import json
import os
import random
import signal
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_serve import TIMEOUT, ServerProcess, build_gpt2, expect, failures  # noqa: E402
from check_serve_hostile import read_response, request_bytes, JSON  # noqa: E402

GPT2 = "L=2,H=2,d_e=128,d_mlp=256,N_V=300,l_max=128"
DEADLINE = 600  # seconds for the whole loaded run


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = []   # good requests, seconds
        self.bad = []         # what went wrong, one line each
        self.hostile = {}     # kind -> [answered as expected, not]

    def good(self, seconds):
        with self.lock:
            self.latencies.append(seconds)

    def wrong(self, what):
        with self.lock:
            if len(self.bad) < 20:
                self.bad.append(what)
            else:
                self.bad.append("...")

    def hostile_result(self, kind, ok, what=""):
        with self.lock:
            self.hostile.setdefault(kind, [0, 0])[0 if ok else 1] += 1
        if not ok:
            self.wrong(f"{kind}: {what}")


def good_client(port, index, requests, max_tokens, tally, stop_at):
    rng = random.Random(index)
    sock = None
    for k in range(requests):
        if time.time() > stop_at:
            tally.wrong(f"good client {index}: past the deadline")
            return
        stream = (index + k) % 2 == 1
        body = json.dumps({"prompt": [rng.randrange(1, 290) for _ in range(rng.randrange(1, 20))],
                           "max_tokens": max_tokens, "stream": stream}).encode()
        start = time.time()
        try:
            if sock is None:
                sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
            sock.sendall(request_bytes("POST", "/v1/completions", body, JSON, port))
            status, headers, reply = read_response(sock)
            if status != 200:
                raise ValueError(f"status {status}: {reply[:200]!r}")
            if stream:
                events = [e[len(b"data: "):] for e in reply.split(b"\n\n")
                          if e.startswith(b"data: ")]
                last = json.loads(events[-2])
                if events[-1] != b"[DONE]" or last["usage"]["completion_tokens"] != max_tokens:
                    raise ValueError(f"stream ended {events[-1][:40]!r}")
            else:
                if json.loads(reply)["usage"]["completion_tokens"] != max_tokens:
                    raise ValueError("wrong token count")
            if headers.get("connection") == "close":
                sock.close()
                sock = None
            tally.good(time.time() - start)
        except (OSError, ValueError, KeyError, IndexError) as e:
            tally.wrong(f"good client {index} request {k}: {e}")
            if sock:
                sock.close()
            sock = None
    if sock:
        sock.close()


def expect_status(port, data, want, kind, tally, close_after_send=False):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
            s.sendall(data)
            status, _, reply = read_response(s)
        tally.hostile_result(kind, status in want, f"{status} {reply[:80]!r}")
        return reply
    except OSError as e:
        tally.hostile_result(kind, False, str(e))


def slowloris(port, tally, stop):
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        while not stop.is_set():
            try:
                s.sendall(b"X")
                s.settimeout(0.2)
                data = s.recv(4096)
                tally.hostile_result("slowloris", data == b"" or data.startswith(b"HTTP/1.1 408"),
                                     repr(data[:40]))
                return
            except socket.timeout:
                continue
            except OSError:  # reset after the server's 408 and close
                tally.hostile_result("slowloris", True)
                return
    tally.hostile_result("slowloris", True)  # the run ended first: nothing to check


def disconnect(port, rng):
    body = json.dumps({"prompt": [1, 2, 3], "max_tokens": 100,
                       "stream": rng.random() < 0.5}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        how = rng.randrange(3)
        if how == 0:  # half a body
            whole = request_bytes("POST", "/v1/completions", body, JSON, port)
            s.sendall(whole[:len(whole) - len(body) // 2])
        else:
            s.sendall(request_bytes("POST", "/v1/completions", body, JSON, port))
            if how == 2:
                s.recv(64)  # the head of the answer: it runs


def hostile_client(port, index, tally, stop):
    rng = random.Random(1000 + index)
    kinds = ["slowloris", "oversized", "chunked", "range", "disconnect", "garbage"]
    k = index
    while not stop.is_set():
        kind = kinds[k % len(kinds)]
        k += 1
        try:
            if kind == "slowloris":
                slowloris(port, tally, stop)
            elif kind == "oversized":
                expect_status(port, request_bytes("POST", "/v1/completions", b"",
                                                  {**JSON, "Content-Length": str(5 << 20)}, port),
                              (413,), kind, tally)
            elif kind == "chunked":
                head = request_bytes("POST", "/v1/completions", b"",
                                     {**JSON, "Transfer-Encoding": "chunked"}, port)
                piece = b"100000\r\n" + b" " * 0x100000 + b"\r\n"
                expect_status(port, head + piece * 5, (413,), kind, tally)
            elif kind == "range":
                body = json.dumps({"prompt": [5], "max_tokens": 4}).encode()
                ranges = "bytes=" + ",".join(f"{i}-{i + 1}" for i in range(0, 600, 2))
                reply = expect_status(port, request_bytes("POST", "/v1/completions", body,
                                                          {**JSON, "Range": ranges}, port),
                                      (200,), kind, tally)
                if reply is not None and b'"completion_tokens": 4' not in reply:
                    tally.wrong(f"range: not the whole reply: {reply[:80]!r}")
            elif kind == "disconnect":
                disconnect(port, rng)
                tally.hostile_result(kind, True)
            else:
                junk = bytes(rng.randrange(256) for _ in range(rng.randrange(10, 400)))
                expect_status(port, b"\x01" + junk + b"\r\n\r\n", (400, 414, 431, 505), kind,
                              tally)
        except OSError as e:
            tally.hostile_result(kind, False, f"{e}")


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def load_run(server, good, hostile, requests, max_tokens):
    """One run; returns the Tally."""
    tally = Tally()
    stop = threading.Event()
    stop_at = time.time() + DEADLINE
    bad_threads = [threading.Thread(target=hostile_client, args=(server.port, i, tally, stop))
                   for i in range(hostile)]
    good_threads = [threading.Thread(target=good_client,
                                     args=(server.port, i, requests, max_tokens, tally, stop_at))
                    for i in range(good)]
    for t in bad_threads + good_threads:
        t.start()
    for t in good_threads:
        t.join()
    stop.set()
    for t in bad_threads:
        t.join(TIMEOUT)
    return tally


def start(exe, batch, extra=()):
    return ServerProcess([exe, "--random-weights", "5", "--eos", "none", "--serve", "--port", "0",
                          "--batch", str(batch), "--request-timeout", "3", *extra])


def wait_idle(server):
    status, _, body = None, {}, b""
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
            s.sendall(request_bytes("GET", "/health", port=server.port))
            status, _, body = read_response(s)
        h = json.loads(body)
        if h["running"] == 0 and h["waiting"] == 0:
            break
        time.sleep(0.05)
    return status, json.loads(body) if body else {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--workdir")
    ap.add_argument("--good", type=int, default=8)
    ap.add_argument("--hostile", type=int, default=4)
    ap.add_argument("--requests", type=int, default=12)
    ap.add_argument("--max-tokens", type=int, default=16)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xf-serve-load-") as tmp:
        exe = build_gpt2(args.xfc, args.workdir or tmp, GPT2)
        server = start(exe, 4)
        try:
            tally = load_run(server, args.good, args.hostile, args.requests, args.max_tokens)
            n = args.good * args.requests
            expect(len(tally.latencies) == n and not tally.bad,
                   f"{args.good} good clients x {args.requests} requests beside {args.hostile} "
                   f"hostile ones: {len(tally.latencies)}/{n} answered 200 in full "
                   f"(p50 {percentile(tally.latencies, 50) * 1e3:.0f} ms, p99 "
                   f"{percentile(tally.latencies, 99) * 1e3:.0f} ms; not asserted); "
                   f"problems: {tally.bad[:5]}")
            expect(tally.hostile and all(v[1] == 0 for v in tally.hostile.values()),
                   f"hostile requests answered as expected: {tally.hostile}")
            status, health = wait_idle(server)
            expect(status == 200 and health.get("running") == 0,
                   f"/health afterwards: {status}, running {health.get('running')}; peak RSS "
                   f"{peak_rss_mib(server.proc.pid):.0f} MiB")
            code, _ = server.stop()
            expect(code == 0, f"SIGTERM after the run: exit {code}")
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
