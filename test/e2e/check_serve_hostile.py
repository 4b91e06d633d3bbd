#!/usr/bin/env python3
"""--serve against hostile clients and the server's conventions (docs/serving.md).

Each case is one the HTTP layer must hold (issue 33), on loopback, against a small GPT-2:
- a request trickled a byte at a time is cut at --request-timeout (a deadline, not an idle
  timeout); /health answers while 80 such clients hold connections;
- a request line of up to 32 MiB is refused (414) after its first KiBs, a header section
  (431), a chunked or declared body over 4 MiB (413) as soon as it passes the limit;
- a Range header does not turn a reply into 206 parts;
- past 256 connections a new one gets 503 + Retry-After at once; past the 64 complete requests
  waiting for a worker, 503 + Retry-After;
- a non-streamed request whose client hangs up stops generating (tokens counted by /metrics);
- a form-encoded or untyped JSON body is 415, not 413 or parsed;
- --api-key / XF_API_KEY (Bearer), no --host beyond loopback without a key or --insecure,
  Host and Origin checks, CORS for --allowed-origin, /metrics, /ready, --access-log;
- SIGTERM twice ends the process with a slow client connected.
Assertions are on statuses, bytes and counts, with generous bounds where the server's reaction
races the client (how many bytes it got to send before the refusal), never on durations.

usage: check_serve_hostile.py --xfc build/bin/xfc [--workdir DIR]
"""

import argparse
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_serve import TIMEOUT, ServerProcess, build_gpt2, expect, failures  # noqa: E402

# A decoder slow enough per sequence (positions up to 1024) that work can be cancelled.
GPT2 = "L=2,H=2,d_e=256,d_mlp=512,N_V=300,l_max=1024"
JSON = {"Content-Type": "application/json"}


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)


def request_bytes(method, path, body=b"", headers=None, port=0):
    h = {"Host": f"127.0.0.1:{port}", **(headers or {})}
    if body and "Transfer-Encoding" not in h:
        h["Content-Length"] = str(len(body))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items())
    return head.encode() + b"\r\n" + body


def read_response(sock, limit=64 << 20):
    """(status, headers dict with lower-case names, body bytes) of one response, read whole."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    if b"\r\n\r\n" not in data:
        return None, {}, data
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip()
               for l in lines[1:] if ":" in l}
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(body) < n:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    elif headers.get("transfer-encoding") == "chunked":
        while not body.endswith(b"\r\n0\r\n\r\n") and len(body) < limit:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        body = dechunk(body)
    return status, headers, body


def dechunk(data):
    """The payload of a chunked body (as far as it is well-formed)."""
    out, at = b"", 0
    while True:
        end = data.find(b"\r\n", at)
        if end < 0:
            return out
        size = int(data[at:end].split(b";")[0] or b"0", 16)
        if size == 0:
            return out
        out += data[end + 2:end + 2 + size]
        at = end + 2 + size + 2


def exchange(port, method, path, body=b"", headers=None):
    with connect(port) as s:
        s.sendall(request_bytes(method, path, body, headers, port))
        return read_response(s)


def answered_while_sending(port, prefix, piece, most, chunked=False):
    """Sends `prefix`, then `piece` again and again until a response arrives or `most` bytes
    went out; returns (status, bytes sent before the response was seen)."""
    with connect(port) as s:
        s.sendall(prefix)
        sent = 0
        while sent < most:
            try:
                s.sendall(piece)
            except OSError:  # the server closed after answering
                break
            sent += len(piece)
            if select.select([s], [], [], 0.05)[0]:
                break
        try:
            status, _, _ = read_response(s)
        except OSError:
            status = None
        return status, sent


def metric(port, name, headers=None):
    status, _, body = exchange(port, "GET", "/metrics", headers=headers)
    if status != 200:
        return None
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def layer_limits(server):
    port = server.port
    # A 32 MiB request line, sent 64 KiB at a time: refused after its first 8 KiB.
    status, sent = answered_while_sending(port, b"GET /", b"a" * 65536, 32 << 20)
    expect(status == 414 and sent <= 4 << 20,
           f"request line of up to 32 MiB: {status} after {sent >> 10} KiB sent (<= 4 MiB)")
    status, sent = answered_while_sending(port, b"GET /health HTTP/1.1\r\n",
                                          b"X-Pad: " + b"a" * 4000 + b"\r\n", 32 << 20)
    expect(status == 431 and sent <= 4 << 20,
           f"header fields of up to 32 MiB: {status} after {sent >> 10} KiB sent")
    # Bodies: a declared one, a chunked one of 256 KiB chunks, one chunk declared too large.
    status, _, _ = exchange(port, "POST", "/v1/completions", b"",
                            {**JSON, "Content-Length": str(5 << 20)})
    expect(status == 413, f"Content-Length 5 MiB: {status} before the body")
    piece = b"40000\r\n" + b" " * 0x40000 + b"\r\n"
    status, sent = answered_while_sending(
        port, request_bytes("POST", "/v1/completions", b"",
                            {**JSON, "Transfer-Encoding": "chunked"}, port), piece, 64 << 20)
    expect(status == 413 and sent <= 8 << 20,
           f"chunked body of up to 64 MiB: {status} after {sent >> 10} KiB sent (<= 8 MiB)")
    with connect(port) as s:
        s.sendall(request_bytes("POST", "/v1/completions", b"",
                                {**JSON, "Transfer-Encoding": "chunked"}, port) + b"500000\r\n")
        status, _, _ = read_response(s)
    expect(status == 413, f"a chunk declared as 5 MiB: {status} before its data")
    # A chunked body within the limit is a request like any other.
    body = json.dumps({"prompt": [1, 2], "max_tokens": 2}).encode()
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 5]), body[i:i + 5])
                       for i in range(0, len(body), 5)) + b"0\r\n\r\n"
    status, _, reply = exchange(port, "POST", "/v1/completions", chunked,
                                {**JSON, "Transfer-Encoding": "chunked"})
    expect(status == 200 and json.loads(reply)["usage"]["completion_tokens"] == 2,
           f"a chunked body in 5-byte chunks: {status}")
    # Smuggling shapes.
    status, _, _ = exchange(port, "POST", "/v1/completions", body,
                            {**JSON, "Transfer-Encoding": "chunked",
                             "Content-Length": str(len(body))})
    expect(status == 400, f"Content-Length with Transfer-Encoding: {status}")


def conventions_of_bodies(server):
    port = server.port
    big = json.dumps({"prompt": "hello " * 1700, "max_tokens": 1}).encode()  # 10 KB
    for ctype in ("application/x-www-form-urlencoded", None, "text/plain"):
        status, _, reply = exchange(port, "POST", "/v1/completions", big,
                                    {"Content-Type": ctype} if ctype else {})
        msg = json.loads(reply)["error"]["message"] if status else ""
        expect(status == 415 and "application/json" in msg,
               f"10 KB JSON as {ctype}: {status} {msg[:70]!r}")
    status, _, reply = exchange(port, "POST", "/v1/completions",
                                json.dumps({"prompt": [1, 2], "max_tokens": 3}).encode(),
                                {"Content-Type": "application/json; charset=utf-8"})
    expect(status == 200, f"application/json; charset=utf-8: {status}")
    # Range is not for the API: the whole reply, never 206 parts.
    ranges = "bytes=" + ",".join(f"{i}-{i + 10}" for i in range(0, 3000, 10))
    status, headers, reply = exchange(port, "POST", "/v1/completions",
                                      json.dumps({"prompt": [1], "max_tokens": 4}).encode(),
                                      {**JSON, "Range": ranges})
    ok = status == 200
    try:
        ok = ok and json.loads(reply)["usage"]["completion_tokens"] == 4
    except ValueError:
        ok = False
    expect(ok and "content-range" not in headers,
           f"300 ranges: {status}, the whole JSON reply ({len(reply)} bytes)")
    status, headers, reply = exchange(port, "GET", "/health", headers={"Range": "bytes=0-3"})
    expect(status == 200 and reply.startswith(b"{"), f"Range on /health: {status}")


def access_checks(server):
    port = server.port
    body = json.dumps({"prompt": [1], "max_tokens": 1}).encode()
    for host, want in (("evil.example", 403), (f"evil.example:{port}", 403),
                       (f"localhost:{port}", 200), ("127.0.0.1", 200), (f"[::1]:{port}", 200)):
        status, _, _ = exchange(port, "POST", "/v1/completions", body, {**JSON, "Host": host})
        expect(status == want, f"Host {host}: {status} (want {want})")
    for origin, want in (("http://evil.example", 403), ("http://localhost:3000", 200),
                         ("null", 403), ("https://app.example", 200)):
        status, headers, _ = exchange(port, "POST", "/v1/completions", body,
                                      {**JSON, "Origin": origin})
        acao = headers.get("access-control-allow-origin")
        expect(status == want and (want != 200 or acao == origin),
               f"Origin {origin}: {status}, Access-Control-Allow-Origin {acao}")
    status, headers, _ = exchange(port, "OPTIONS", "/v1/completions",
                                  headers={"Origin": "https://app.example",
                                           "Access-Control-Request-Method": "POST"})
    expect(status == 204 and "Authorization" in headers.get("access-control-allow-headers", ""),
           f"CORS preflight from --allowed-origin: {status}")
    status, _, _ = exchange(port, "OPTIONS", "/v1/completions",
                            headers={"Origin": "http://evil.example"})
    expect(status == 403, f"CORS preflight from another origin: {status}")
    status, _, reply = exchange(port, "GET", "/ready")
    expect(status == 200 and json.loads(reply)["status"] == "ready", f"/ready: {status}")
    status, headers, reply = exchange(port, "GET", "/metrics")
    text = reply.decode()
    expect(status == 200 and headers.get("content-type", "").startswith("text/plain") and
           'xf_http_requests_total{status="200"}' in text and
           'xf_http_request_duration_seconds_bucket{le="+Inf"}' in text and
           "xf_requests_waiting " in text and (metric(port, "xf_generated_tokens_total") or 0) > 0,
           f"/metrics: {status}, {len(text.splitlines())} lines")


def slow_clients(server):
    port = server.port
    # A head trickled a byte every 0.25 s: cut at --request-timeout 2 s, though bytes keep coming.
    with connect(port) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\n")
        cut, reply = False, b""
        for _ in range(40):  # 10 s of trickling
            if select.select([s], [], [], 0.25)[0]:
                reply = s.recv(4096)
                cut = True
                break
            try:
                s.sendall(b"X")
            except OSError:
                cut = True
                break
    expect(cut and (reply == b"" or reply.startswith(b"HTTP/1.1 408")),
           f"a byte every 0.25 s: cut by the 2 s deadline ({reply[:12]!r})")
    # 80 slow clients, each sending a byte of its head every 0.5 s; /health and a completion
    # are still answered (cpp-httplib's 48 threads all waited on them, /health too).
    slow, done = [], threading.Event()

    def trickle():
        while not done.wait(0.5):
            for c in slow:
                try:
                    c.sendall(b"x")
                except OSError:
                    pass
    trickler = threading.Thread(target=trickle)
    try:
        for _ in range(80):
            c = connect(port)
            c.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            slow.append(c)
        trickler.start()
        time.sleep(1)  # a byte or two from each
        for what, method, path, body in (
                ("/health", "GET", "/health", b""),
                ("a completion", "POST", "/v1/completions",
                 json.dumps({"prompt": [1], "max_tokens": 2}).encode())):
            try:
                status = exchange(port, method, path, body, JSON if body else None)[0]
            except OSError as e:  # no answer within TIMEOUT
                status = e
            expect(status == 200, f"{what} with 80 slow clients trickling: {status}")
    finally:
        done.set()
        if trickler.is_alive():
            trickler.join()
        for c in slow:
            c.close()
    # 256 connections open: the next one is refused at once with 503 + Retry-After.
    idle = []
    try:
        for _ in range(256):
            idle.append(connect(port))
        time.sleep(0.2)  # let the server accept them
        with connect(port) as s:
            s.sendall(request_bytes("GET", "/health", port=port))
            status, headers, _ = read_response(s)
        expect(status == 503 and headers.get("retry-after") == "1",
               f"connection 257: {status}, Retry-After {headers.get('retry-after')}")
    finally:
        for c in idle:
            c.close()


def cancel_and_queue(server):
    """--batch 1: one sequence decodes, the rest wait; 17 workers, a queue of 64."""
    port = server.port
    body = json.dumps({"prompt": [1], "max_tokens": 1000}).encode()
    # 16 non-streamed requests, all submitted, then their clients leave.
    socks = [connect(port) for _ in range(16)]
    for s in socks:
        s.sendall(request_bytes("POST", "/v1/completions", body, JSON, port))
    deadline = time.time() + TIMEOUT
    while time.time() < deadline and (metric(port, "xf_prompt_tokens_total") or 0) < 16:
        time.sleep(0.01)
    for s in socks:
        s.close()
    while time.time() < deadline and (metric(port, "xf_requests_running") or 0) + \
            (metric(port, "xf_requests_waiting") or 0) > 0:
        time.sleep(0.05)
    # The first ones may finish before their clients leave (a step is well under a
    # millisecond); the rest must not run to the end.
    tokens = metric(port, "xf_generated_tokens_total")
    cancelled = metric(port, "xf_cancelled_requests_total")
    expect(cancelled is not None and cancelled >= 8 and tokens is not None and tokens < 8000,
           f"16 non-streamed requests of 1000 tokens whose clients left: {tokens} tokens "
           f"generated (< 8000 of 16000), {cancelled} cancelled (>= 8)")
    # 90 long requests at once: 17 workers + 64 queued; the rest get 503 + Retry-After (9
    # unless the first ones finish while the others arrive).
    socks = [connect(port) for _ in range(90)]
    for s in socks:
        s.sendall(request_bytes("POST", "/v1/completions", body, JSON, port))
    answers = {}
    deadline = time.time() + TIMEOUT
    while not any(a[0] == 503 for a in answers.values()) and len(answers) < len(socks) and \
            time.time() < deadline:
        for s in select.select([s for s in socks if s not in answers], [], [], 0.5)[0]:
            status, headers, _ = read_response(s)
            answers[s] = (status, headers.get("retry-after"))
    time.sleep(0.2)
    for s in select.select([s for s in socks if s not in answers], [], [], 0)[0]:
        status, headers, _ = read_response(s)
        answers[s] = (status, headers.get("retry-after"))
    busy = [a for a in answers.values() if a[0] == 503]
    expect(len(busy) >= 1 and all(r == "1" for _, r in busy) and
           all(a[0] in (200, 503) for a in answers.values()),
           f"90 requests at once: {len(busy)} answered 503 with Retry-After (>= 1)")
    for s in socks:
        s.close()
    while time.time() < deadline and (metric(port, "xf_requests_running") or 0) + \
            (metric(port, "xf_requests_waiting") or 0) > 0:
        time.sleep(0.05)


def sigterm_with_slow_client(server):
    slow = connect(server.port)
    slow.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    stream = connect(server.port)
    stream.sendall(request_bytes("POST", "/v1/completions",
                                 json.dumps({"prompt": [1], "max_tokens": 1000,
                                             "stream": True}).encode(), JSON, server.port))
    stream.recv(256)  # it runs
    server.proc.send_signal(signal.SIGTERM)
    # The second signal once the first is taken (/health says "stopping"): two SIGTERMs sent
    # before the server's signal thread runs are one pending signal.
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        try:
            if json.loads(exchange(server.port, "GET", "/health")[2])["status"] == "stopping":
                break
        except (OSError, ValueError, KeyError):
            break
        time.sleep(0.05)
    server.proc.send_signal(signal.SIGTERM)
    # The slow client goes on sending a byte every 0.5 s (it kept cpp-httplib's stop waiting).
    code, deadline = None, time.time() + TIMEOUT
    while code is None and time.time() < deadline:
        try:
            slow.sendall(b"x")
        except OSError:
            pass
        try:
            code = server.proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
    # It ends: 0 once the stream is abandoned and every connection closed, 1 if stopping took
    # longer than the documented 30 s and the process cut it short (an exit 1 was seen once,
    # under a load of 11 on 2 cores, when that limit was 10 s); the last stderr lines say which.
    said = " | ".join(server.proc.stderr.read().strip().splitlines()[-2:]) if code is not None \
        else ""
    expect(code in (0, 1), f"SIGTERM twice with a trickling slow client and a stream "
                           f"connected: exit {code} ({said})")
    slow.close()
    stream.close()


def api_key(exe, weights):
    body = json.dumps({"prompt": [1], "max_tokens": 1}).encode()
    for how, env, args in (("--api-key", {}, ["--api-key", "sekrit"]),
                           ("XF_API_KEY", {"XF_API_KEY": "sekrit"}, [])):
        server = ServerProcess([exe, *weights, "--serve", "--port", "0", *args],
                               env={**os.environ, **env})
        try:
            port = server.port
            for auth, want in ((None, 401), ("Bearer wrong", 401), ("Bearer sekri", 401),
                               ("Basic sekrit", 401), ("Bearer sekrit", 200),
                               ("bearer sekrit", 200)):
                status, headers, _ = exchange(port, "POST", "/v1/completions", body,
                                              {**JSON, **({"Authorization": auth} if auth else {})})
                expect(status == want and (want != 401 or headers.get("www-authenticate") ==
                                           "Bearer"), f"{how}, Authorization {auth}: {status}")
            expect(exchange(port, "GET", "/health")[0] == 200 and
                   exchange(port, "GET", "/metrics")[0] == 401 and
                   exchange(port, "GET", "/v1/models")[0] == 401,
                   f"{how}: /health open, /metrics and /v1/models need the key")
        finally:
            server.proc.kill()
            server.proc.wait()
    # Beyond loopback only with a key or --insecure (203.0.113.7: passes the check, then
    # cannot be bound here).
    env = {k: v for k, v in os.environ.items() if k != "XF_API_KEY"}
    for args, extra, code, msg in (
            (["--host", "0.0.0.0"], {}, 2, "can be reached from other machines"),
            (["--host", "203.0.113.7", "--insecure"], {}, 1, "cannot listen on 203.0.113.7"),
            (["--host", "203.0.113.7", "--api-key", "k"], {}, 1, "cannot listen"),
            (["--host", "203.0.113.7"], {"XF_API_KEY": "k"}, 1, "cannot listen"),
            (["--insecure"], None, 2, "--insecure needs --serve")):
        cmd = [exe, *weights, *(["--serve", "--port", "0"] if extra is not None else []), *args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                           env={**env, **(extra or {})})
        first = (r.stderr.splitlines() or [""])[0]
        expect(r.returncode == code and msg in first,
               f"{' '.join(args)} {extra or ''}: exit {r.returncode}, {first!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xf-serve-hostile-") as tmp:
        work = args.workdir or tmp
        exe = build_gpt2(args.xfc, work, GPT2)
        weights = ["--random-weights", "5", "--eos", "none"]  # sequences run to max_tokens
        log = os.path.join(work, "access.log")
        server = ServerProcess([exe, *weights, "--serve", "--port", "0", "--request-timeout", "2",
                                "--allowed-origin", "https://app.example", "--access-log", log])
        try:
            layer_limits(server)
            conventions_of_bodies(server)
            access_checks(server)
            slow_clients(server)
            # Once the server has seen the 256 clients go (503 until then), it answers.
            deadline = time.time() + TIMEOUT
            status = None
            while status != 200 and time.time() < deadline:
                status, _, _ = exchange(server.port, "GET", "/health")
                time.sleep(0.05)
            expect(status == 200, f"the server answers after all that: {status}")
            code, _ = server.stop()
            expect(code == 0, f"SIGTERM: exit {code}")
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
        with open(log) as f:
            lines = [json.loads(l) for l in f]
        keys = {"time", "peer", "method", "path", "status", "bytes_in", "bytes_out", "seconds"}
        expect(len(lines) >= 30 and all(set(l) == keys for l in lines) and
               any(l["status"] == 413 for l in lines) and
               any(l["status"] == 503 for l in lines),
               f"--access-log: {len(lines)} JSON lines, one per answer")

        server = ServerProcess([exe, *weights, "--serve", "--port", "0", "--batch", "1"])
        try:
            cancel_and_queue(server)
            sigterm_with_slow_client(server)
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
        api_key(exe, weights)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
