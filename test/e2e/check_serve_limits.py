#!/usr/bin/env python3
"""--serve's work and memory in proportion to what is asked (issue 33, item 2), end to end.

A small GPT-2 with 4096 positions (each place's KV cache 8 MiB) and a small MiniLM, each on
an ephemeral port; the counters are GET /health's. Every assertion counts tokens, steps,
blocks or bytes, or compares the order of two events many steps apart; none times anything.

- KV memory follows the tokens: 32 concurrent three-token requests raise the server's peak
  resident memory by less than 48 MiB (a full 8 MiB cache per place would be 256 MiB).
- --kv-memory: concurrent requests never reserve more KV blocks than the budget (they wait
  their turn and all complete); one that could never fit gets 413 naming --kv-memory.
- --max-context: a longer prompt gets 400 naming it.
- A client that hangs up on a non-streamed request cancels it: the server stops generating
  (tokens counted) instead of running its max_tokens out; one that leaves a streamed request
  during its 2000-step prefill has it dropped before it generates a token.
- Chunked prefill (--step-tokens 16): no step runs more than 16 token rows; a long prompt's
  reply is a single run's; a short request already decoding finishes before a 1000-token
  prompt that arrived after it gets its first token.
- Embeddings: a request over --max-request-tokens gets 413 naming it; a one-input request
  sent while a 1200-input request runs is answered first, with the same vector as alone;
  no pass runs more than --step-tokens tokens.

usage: check_serve_limits.py --xfc build/bin/xfc [--workdir DIR]
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import socket
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_serve  # noqa: E402  (ServerProcess, expect, check_error, run)
from check_serve import ROOT, TIMEOUT, ServerProcess, build_gpt2, check_error, expect, run  # noqa: E402

GPT2 = "L=2,H=2,d_e=128,d_mlp=256,N_V=300,l_max=4096"  # 2 KiB of KV per position
MINILM = "L=2,H=2,d_e=128,d_mlp=512,N_V=200,l_max=40"  # passes of ~1 ms: a wide window
MiB = 1 << 20


def health(server):
    status, text = server.request("GET", "/health")
    return json.loads(text)


def wait_health(server, predicate):
    deadline = time.time() + TIMEOUT
    h = health(server)
    while not predicate(h) and time.time() < deadline:
        time.sleep(0.01)
        h = health(server)
    return h


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def stream_events(server, body, on_event):
    """POSTs a streamed completion; on_event(parsed) for each event but [DONE]."""
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
    try:
        c.request("POST", "/v1/completions", body=json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        buf = b""
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                if event.startswith(b"data: ") and event != b"data: [DONE]":
                    on_event(json.loads(event[len(b"data: "):]))
    finally:
        c.close()


def memory_and_budget(exe, weights):
    # 32 places of 4096 positions; 32 three-token requests at once.
    server = ServerProcess([exe, *weights, "--serve", "--port", "0"])
    try:
        before = status_kib(server.proc.pid, "VmRSS")
        bodies = [{"prompt": [1 + k, 2, 3], "max_tokens": 4} for k in range(32)]
        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            got = list(pool.map(lambda b: server.post("/v1/completions", b), bodies))
        peak = status_kib(server.proc.pid, "VmHWM")
        h = health(server)
        ok = all(s == 200 and len(r["choices"][0]["token_ids"]) == 4 for s, r in got)
        expect(ok and peak - before < 48 * MiB,
               f"32 concurrent 3-token requests: peak resident +{(peak - before) / MiB:.1f} MiB "
               f"< 48 MiB (32 full caches: {32 * 4096 * 2048 / MiB:.0f} MiB); "
               f"KV blocks of {h.get('kv_block_bytes')} bytes, {h.get('kv_blocks_in_use')} in use "
               f"after")
        expect(h.get("kv_blocks_in_use") == 0 and h.get("kv_blocks_reserved") == 0,
               f"no KV blocks held once idle: {h.get('kv_blocks_in_use')} in use, "
               f"{h.get('kv_blocks_reserved')} reserved")
    finally:
        server.stop()

    # A budget of 3 × 19 blocks: a request of 3 + 300 positions reserves 19.
    block = h.get("kv_block_bytes") or 0
    budget = 57 * block
    server = ServerProcess([exe, *weights, "--serve", "--port", "0", "--batch", "8",
                            "--kv-memory", str(budget)])
    try:
        bodies = [{"prompt": [5 + k, 6, 7], "max_tokens": 300} for k in range(8)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda b: server.post("/v1/completions", b), bodies))
        h = health(server)
        ok = all(s == 200 and len(r["choices"][0]["token_ids"]) == 300 for s, r in got)
        expect(ok and 0 < h.get("kv_blocks_reserved_peak", 0) <= 57 and
               0 < h.get("max_running", 0) <= 3,
               f"--kv-memory of 57 blocks: 8 concurrent requests of 19 blocks all complete, at "
               f"most {h.get('kv_blocks_reserved_peak')} blocks reserved and "
               f"{h.get('max_running')} running together (<= 57, <= 3 of 8 places)")
        check_error(server, "a request over --kv-memory", None,
                    {"prompt": [1, 2, 3], "max_tokens": 950}, 413, "max_tokens")
        s, text = server.request("POST", "/v1/completions", {"prompt": [1, 2, 3], "max_tokens": 950})
        expect("--kv-memory " + str(budget) in text, f"the 413 names --kv-memory: {text.strip()}")
    finally:
        server.stop()

    server = ServerProcess([exe, *weights, "--serve", "--port", "0", "--max-context", "64"])
    try:
        check_error(server, "a prompt over --max-context", None, {"prompt": [1] * 65}, 400,
                    "prompt")
        s, text = server.request("POST", "/v1/completions", {"prompt": [1] * 65})
        expect("--max-context's 64 positions" in text, f"the 400 names --max-context: "
               f"{text.strip()}")
        s, r = server.post("/v1/completions", {"prompt": [1] * 60, "max_tokens": 100})
        expect(s == 200 and len(r["choices"][0]["token_ids"]) == 5,
               f"60 + 100 positions: the sequence stops at --max-context 64 "
               f"({len(r['choices'][0]['token_ids']) if s == 200 else s} new tokens)")
        h = health(server)
        expect(h["max_step_rows"] == 60, f"... its prompt in one step: {h['max_step_rows']} rows")
    finally:
        server.stop()


def cancellation(exe, weights):
    server = ServerProcess([exe, *weights, "--serve", "--port", "0", "--batch", "4",
                            "--step-tokens", "2"])
    try:
        # Four non-streamed requests of 4000 tokens whose clients hang up once they run.
        body = json.dumps({"prompt": [7, 8, 9], "max_tokens": 4000}).encode()
        socks = []
        for _ in range(4):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                      b"application/json\r\nContent-Length: " + str(len(body)).encode() +
                      b"\r\n\r\n" + body)
            socks.append(s)
        wait_health(server, lambda h: h["running"] == 4 and h.get("tokens", 0) >= 4)
        for s in socks:
            s.close()
        h = wait_health(server, lambda h: h["running"] == 0 and h["waiting"] == 0)
        expect(h["running"] == 0 and h.get("cancelled") == 4 and h.get("tokens", 16000) < 12000,
               f"4 non-streamed requests of 4000 tokens whose clients left: "
               f"{h.get('tokens')} tokens generated (< 12000 of 16000), "
               f"{h.get('cancelled')} cancelled")
        # A streamed request whose client leaves during its prefill (4000 prompt tokens in
        # slices of 2: 2000 steps) is dropped before it generates anything.
        before = h
        body = json.dumps({"prompt": [1] * 4000, "max_tokens": 50, "stream": True}).encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                      b"application/json\r\nContent-Length: " + str(len(body)).encode() +
                      b"\r\n\r\n" + body)
            wait_health(server, lambda h: h["steps"] > before["steps"])
        h = wait_health(server, lambda h: h["running"] == 0 and h["waiting"] == 0)
        expect(h.get("cancelled") == before.get("cancelled", 0) + 1 and
               h.get("tokens") == before.get("tokens"),
               f"a streamed request whose client left during its 2000-step prefill: cancelled, "
               f"{h.get('tokens', 0) - before.get('tokens', 0)} tokens generated "
               f"(after {h['steps'] - before['steps']} steps)")
        # The server goes on.
        s, r = server.post("/v1/completions", {"prompt": [1, 2], "max_tokens": 3})
        expect(s == 200 and len(r["choices"][0]["token_ids"]) == 3,
               "the next request after the cancelled ones is answered")
    finally:
        server.stop()


def race(server, first, second, ready):
    """Streams `first`, sends `second` once ready(events of first so far, /health) holds;
    returns the order of "first token", "first finished", "second token", "second finished"."""
    events, count = [], {"first": 0}
    lock = threading.Lock()

    def note(name):
        def on(event):
            choice = event["choices"][0]
            with lock:
                count[name] = count.get(name, 0) + 1
                events.append(name + (" finished" if choice["finish_reason"] is not None
                                      else " token"))
        return on

    t = threading.Thread(target=stream_events, args=(server, first, note("first")))
    t.start()
    wait_health(server, lambda h: ready(count["first"], h))
    stream_events(server, second, note("second"))
    t.join()
    seen, order = set(), []
    for e in events:  # the first of each kind, in order
        if e not in seen:
            seen.add(e)
            order.append(e)
    return order


def chunked_prefill(exe, weights):
    rng = np.random.default_rng(11)
    server = ServerProcess([exe, *weights, "--serve", "--port", "0", "--batch", "4",
                            "--step-tokens", "16"])
    try:
        # A long prompt's reply equals a single run's (greedy and sampled).
        for sampled in (False, True):
            ids = [int(x) for x in rng.integers(0, 300, size=300)]
            body = {"prompt": ids, "max_tokens": 6}
            extra = []
            if sampled:
                body.update(temperature=0.9, seed=5)
                extra = ["--temperature", "0.9", "--seed", "5"]
            want = [int(x) for x in run([exe, *weights, "--tokens", ",".join(map(str, ids)),
                                         "--max-new-tokens", "6", *extra]).stdout.strip()
                    .split(",") if x]
            s, r = server.post("/v1/completions", body)
            got = r["choices"][0]["token_ids"] if s == 200 else None
            expect(got == want, f"a 300-token prompt in slices of <= 16 rows "
                   f"({'sampled' if sampled else 'greedy'}): == a single run {want}")

        # A short request decodes; a 1000-token prompt arrives after its first token; the short
        # one (29 steps left) finishes before the long one's first token (>= 67 steps away).
        rng_prompt = [int(x) for x in rng.integers(0, 300, size=4000)]
        order = race(server, {"prompt": [3, 4], "max_tokens": 30, "stream": True},
                     {"prompt": rng_prompt[:1000], "max_tokens": 2, "stream": True},
                     lambda first_events, h: first_events > 0)
        order = [e for e in order if e in ("first finished", "second token")]
        expect(order == ["first finished", "second token"],
               f"a decoding request finishes before a later 1000-token prompt's first token: "
               f"{order[:2]}")
        # A 4000-token prompt is being prefilled (250 steps of 16 rows); a 2-token prompt that
        # arrives meanwhile is prefilled first and finishes (3 tokens) before the long one's
        # first token.
        steps = health(server)["steps"]
        order = race(server, {"prompt": rng_prompt, "max_tokens": 2, "stream": True},
                     {"prompt": [5, 6], "max_tokens": 3, "stream": True},
                     lambda first_events, h: h["steps"] > steps and h["running"] == 1)
        order = [e for e in order if e in ("second finished", "first token")]
        expect(order == ["second finished", "first token"],
               f"a 2-token prompt sent during a 4000-token prompt's prefill finishes before its "
               f"first token: {order[:2]}")
        h = health(server)
        expect(0 < h.get("max_step_rows", 10 ** 9) <= 16,
               f"no step ran more than --step-tokens 16 rows: at most {h.get('max_step_rows')}")
    finally:
        server.stop()


def embeddings(xfc, work):
    exe = os.path.join(work, "minilm")
    run([xfc, os.path.join(ROOT, "examples", "minilm.xf"),
         *[a for kv in MINILM.split(",") for a in ("-D", kv)], "-o", exe])
    weights = ["--random-weights", "9"]
    server = ServerProcess([exe, *weights, "--serve", "--port", "0", "--batch", "2",
                            "--step-tokens", "40", "--max-request-tokens", "50000"])
    rng = np.random.default_rng(5)
    try:
        check_error(server, "an embeddings request over --max-request-tokens", None,
                    {"input": [[1] * 40] * 1300}, 413, "input", path="/v1/embeddings")
        s, text = server.request("POST", "/v1/embeddings", {"input": [[1] * 40] * 1300})
        expect("--max-request-tokens 50000" in text, f"the 413 names the limit: {text.strip()}")
        small = [int(x) for x in rng.integers(0, 200, size=9)]
        s, alone = server.post("/v1/embeddings", {"input": small})
        big = [[int(x) for x in rng.integers(0, 200, size=40)] for _ in range(1200)]
        done = []
        lock = threading.Lock()

        def ask(name, body):
            s, r = server.post("/v1/embeddings", body)
            with lock:
                done.append(name)
            return s, r

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            fb = pool.submit(ask, "big", {"input": big})
            wait_health(server, lambda h: h["running"] >= 1)
            sent = time.monotonic()
            fs = pool.submit(ask, "small", {"input": small})
            (sb, rb), (ss, rs) = fb.result(), fs.result()
            window = time.monotonic() - sent
        h = health(server)
        print(f"(the big request ran {window:.2f} s after the small one was sent)")
        ok = sb == 200 and ss == 200 and len(rb["data"]) == 1200
        a = np.array(alone["data"][0]["embedding"]) if s == 200 else None
        b = np.array(rs["data"][0]["embedding"]) if ss == 200 else None
        err = float(np.abs(a - b).max() / np.abs(a).max()) if a is not None and b is not None \
            else float("inf")
        expect(ok and done == ["small", "big"] and err <= check_serve.REORDER_BOUND,
               f"a 1-input request sent while a 1200-input one runs is answered first "
               f"({done}), its vector as alone (max|Δ|/max|ref| {err:.1e})")
        expect(0 < h.get("max_embedding_call_tokens", 10 ** 9) <= 40,
               f"no embeddings pass ran more than --step-tokens 40 tokens: at most "
               f"{h.get('max_embedding_call_tokens')}")
    finally:
        server.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xf-serve-limits-") as tmp:
        work = args.workdir or tmp
        exe = build_gpt2(args.xfc, work, GPT2)
        weights = ["--random-weights", "5"]
        memory_and_budget(exe, weights)
        cancellation(exe, weights)
        chunked_prefill(exe, weights)
        embeddings(args.xfc, work)
    for f in check_serve.failures:
        print("FAIL:", f)
    sys.exit(1 if check_serve.failures else 0)


if __name__ == "__main__":
    main()
