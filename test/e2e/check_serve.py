#!/usr/bin/env python3
"""--serve end to end: a real HTTP client against the generated executable on localhost.

A small GPT-2 (a toy byte-level BPE tokenizer written here) serves /v1/completions with up to 4
sequences decoding together; a small MiniLM (a toy WordPiece vocab.txt) serves /v1/embeddings.
Each server listens on an ephemeral port (--port 0, read from its first stderr line).

- Concurrent completions (greedy and sampled, streamed and not, text and id prompts, lengths
  1 .. l_max) return exactly the ids of one command-line run per prompt with the same
  options and seed; streamed events concatenate to the same ids and text.
- Chat completions (--chat-template chatml) reply what --chat prints for the same conversation
  (with and without a system message, greedy and sampled), streamed deltas included.
- Concurrent embedding requests (strings, id lists, lists of them) match one command-line run
  per input (max|Δ|/max|ref| <= 1e-5: a packed batch's short rows may take the tiled GEMM where
  a single run takes the GEMV, as check_batches.py explains).
- Bad requests: the status code and the JSON error object (message, type, param) — bad JSON,
  wrong types, out-of-range values, unknown parameters, over-long prompts, oversized bodies,
  wrong methods and paths, garbage request lines; a client that disconnects mid-stream; the
  server answers the next request each time.
- SIGTERM during a request: it completes, the process exits 0.
- Bad command lines: one-line errors.
Every HTTP call and process wait has a timeout, so a hang fails the test instead of blocking it.

usage: check_serve.py --xfc build/bin/xfc [--workdir DIR]
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPT2 = "L=2,H=2,d_e=128,d_mlp=256,N_V=300,l_max=128"  # heads of 64: libxfrt decode attention
MINILM = "L=2,H=4,d_e=48,d_mlp=96,N_V=200,l_max=40"
TIMEOUT = 120  # seconds, for any one HTTP exchange or process wait
REORDER_BOUND = 1e-5
failures = []


def expect(ok, what):
    print(f"{what}: {'ok' if ok else 'FAIL'}", flush=True)
    if not ok:
        failures.append(what)


def run(cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if check and r.returncode:
        sys.exit(f"FAIL: {' '.join(cmd[:4])} ... exited {r.returncode}: {r.stderr.strip()}")
    return r


def bytes_to_unicode():
    """GPT-2's byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write_bpe(directory):
    """Every byte, a few merges, <|endoftext|> and ChatML's two markers: 268 ids < N_V = 300."""
    chars = bytes_to_unicode()
    vocab = [chars[b] for b in range(256)]
    merges = ["h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld"]
    for m in merges:
        vocab.append(m.replace(" ", ""))
    vocab.append("<|endoftext|>")
    eot = len(vocab) - 1
    vocab += ["<|im_start|>", "<|im_end|>"]  # ChatML's markers (--chat-template chatml)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({t: i for i, t in enumerate(vocab)}, f)
    with open(os.path.join(directory, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    return eot


def write_wordpiece(path):
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
             "a", "dog", "ran", "##s", "hello", "world", ".", ","]
    with open(path, "w") as f:
        f.write("\n".join(words) + "\n")


class ServerProcess:
    def __init__(self, cmd, env=None):
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        line, seen = "", ""
        deadline = time.time() + TIMEOUT
        while "http://" not in line and time.time() < deadline:
            line = self.proc.stderr.readline()
            seen += line
            if not line and self.proc.poll() is not None:
                break
        if "http://" not in line:
            self.proc.kill()
            sys.exit(f"FAIL: the server did not start: {seen.strip()}")
        self.port = int(line.split("http://")[1].split(":")[1].split()[0])
        print(line.strip())

    def request(self, method, path, body=None, raw=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            data = raw if raw is not None else (json.dumps(body) if body is not None else None)
            c.request(method, path, body=data, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            c.close()

    def post(self, path, body=None, raw=None):
        status, text = self.request("POST", path, body, raw)
        return status, json.loads(text)

    def stream(self, body, path="/v1/completions"):
        """POST a streaming completion; returns the status and the parsed events."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            c.request("POST", path, body=json.dumps(body),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            text = r.read().decode()
            events = [e[len("data: "):] for e in text.split("\n\n") if e.startswith("data: ")]
            return r.status, r.getheader("Content-Type"), events
        finally:
            c.close()

    def stop(self):
        """SIGTERM; returns (exit code, rest of stderr)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
            return None, err
        return self.proc.returncode, err


def check_error(server, what, status, body, want_status, param=None, method="POST",
                path="/v1/completions"):
    s, text = server.request(method, path, body=body if not isinstance(body, (bytes, str)) else
                             None, raw=body if isinstance(body, (bytes, str)) else None)
    try:
        err = json.loads(text)["error"]
        shape = isinstance(err["message"], str) and err["message"] and "type" in err
        got_param = err.get("param")
    except (ValueError, KeyError, TypeError):
        shape, got_param, err = False, None, text
    ok = s == want_status and shape and (param is None or got_param == param)
    expect(ok, f"{what}: {s} param={got_param} ({err['message'] if shape else err!r})")


def build_gpt2(xfc, work, hparams):
    """examples/gpt2.xf built as WORK/gpt2 at the hyperparameters "K=V,K=V,..."; its path."""
    exe = os.path.join(work, "gpt2")
    run([xfc, os.path.join(ROOT, "examples", "gpt2.xf"),
         *[a for kv in hparams.split(",") for a in ("-D", kv)], "-o", exe])
    return exe


def completions(xfc, work):
    exe = build_gpt2(xfc, work, GPT2)
    tdir = os.path.join(work, "bpe")
    eot = write_bpe(tdir)
    weights = ["--random-weights", "5"]
    rng = np.random.default_rng(7)
    l_max = 128  # room for chat prompts: the toy tokenizer spells ChatML's markers in bytes

    def single(ids, max_tokens, sampling):
        args = [exe, *weights, "--tokens", ",".join(map(str, ids)), "--max-new-tokens",
                str(max_tokens), "--eos", str(eot), *sampling]
        return [int(x) for x in run(args).stdout.strip().split(",") if x]

    cases = []
    for k, (n, max_tokens) in enumerate([(1, 9), (5, 20), (17, 3), (l_max, 5), (40, 12), (2, 30),
                                         (11, 1), (l_max - 1, 4), (8, 16), (3, 25), (23, 7), (6, 11)]):
        ids = [int(x) for x in rng.integers(0, eot, size=n)]
        body = {"prompt": ids, "max_tokens": max_tokens, "stream": k % 3 == 1}
        sampling = []
        if k % 2:
            body.update(temperature=0.9, seed=100 + k)
            sampling = ["--temperature", "0.9", "--seed", str(100 + k)]
            if k % 4 == 3:
                body["top_k"] = 20
                sampling += ["--top-k", "20"]
        cases.append((body, single(ids, max_tokens, sampling)))

    server = ServerProcess([exe, *weights, "--serve", "--port", "0", "--batch", "4",
                            "--tokenizer", tdir, "--chat-template", "chatml"])
    try:
        def ask(body):
            if body["stream"]:
                status, ctype, events = server.stream(body)
                chunks = [json.loads(e) for e in events[:-1]]
                ids = [i for c in chunks for i in c["choices"][0]["token_ids"]]
                ok = (ctype.startswith("text/event-stream") and events[-1] == "[DONE]" and
                      all(len(c["choices"][0]["token_ids"]) == 1 for c in chunks[:-1]) and
                      chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length") and
                      chunks[-1]["usage"]["completion_tokens"] == len(ids))
                return status, ids, ok
            status, r = server.post("/v1/completions", body)
            ids = r["choices"][0]["token_ids"] if status == 200 else None
            ok = status == 200 and r["usage"]["completion_tokens"] == len(ids) and \
                r["usage"]["prompt_tokens"] == len(body["prompt"])
            return status, ids, ok

        with concurrent.futures.ThreadPoolExecutor(len(cases)) as pool:
            got = list(pool.map(ask, [c[0] for c in cases]))
        for (body, want), (status, ids, ok) in zip(cases, got):
            what = (f"completion ℓ={len(body['prompt'])} max_tokens={body['max_tokens']} "
                    f"{'sampled' if 'temperature' in body else 'greedy'}"
                    f"{' top_k' if 'top_k' in body else ''}"
                    f"{' streamed' if body['stream'] else ''}")
            expect(status == 200 and ok and ids == want,
                   f"{what}, 12 concurrent: == a single run ({len(want)} ids)")

        # Text prompts: the server's tokenization and decoding are the command line's.
        text = "hello world hello"
        r = run([exe, *weights, "--tokenizer", tdir, "--prompt", text, "--max-new-tokens", "6"])
        status, body = server.post("/v1/completions", {"prompt": text, "max_tokens": 6})
        expect(status == 200 and body["choices"][0]["text"] + "\n" == r.stdout,
               f"text prompt: text == the command line's ({body['choices'][0]['text']!r})")
        status, ctype, events = server.stream({"prompt": text, "max_tokens": 6, "stream": True})
        streamed = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])
        expect(status == 200 and streamed == body["choices"][0]["text"],
               "text prompt streamed: events' text concatenates to the whole text")

        # Chat completions: the conversation rendered by the template, as --chat renders it
        # (the toy tokenizer spells the markers out in bytes; the end-of-turn id is one token).
        chats = [([{"role": "user", "content": "hello world"}], [], {"max_tokens": 7}),
                 ([{"role": "system", "content": "be brief"},
                   {"role": "user", "content": "hello"}], ["--system", "be brief"],
                  {"max_tokens": 5, "temperature": 0.8, "seed": 3})]
        for messages, system, params in chats:
            cli = subprocess.run([exe, *weights, "--tokenizer", tdir, "--chat", "--chat-template",
                                  "chatml", "--prompt", messages[-1]["content"], *system,
                                  "--max-new-tokens", str(params["max_tokens"]),
                                  *[a for k in ("temperature", "seed") if k in params
                                    for a in ("--" + k, str(params[k]))]],
                                 capture_output=True, timeout=TIMEOUT)
            # --chat prints the reply's bytes; the server's JSON replaces invalid UTF-8 (random
            # weights pick arbitrary byte tokens) with U+FFFD: compare with runs of U+FFFD as one.
            def same_text(a, b):
                return re.sub("\ufffd+", "\ufffd", a) == re.sub("\ufffd+", "\ufffd", b)
            cli_text = cli.stdout.decode(errors="replace")
            body = {"messages": messages, "model": "gpt2", **params}
            status, r = server.post("/v1/chat/completions", body)
            reply = r["choices"][0]["message"]["content"] if status == 200 else None
            prefill = re.search(r"prefill (\d+) tokens", cli.stderr.decode(errors="replace"))
            expect(cli.returncode == 0 and status == 200 and r["object"] == "chat.completion" and
                   same_text(reply + "\n", cli_text) and
                   r["usage"]["prompt_tokens"] == int(prefill.group(1)),
                   f"chat ({len(messages)} messages, {params}): reply == --chat's {reply!r}")
            status, ctype, events = server.stream({**body, "stream": True}, "/v1/chat/completions")
            chunks = [json.loads(e) for e in events[:-1]]
            deltas = [c["choices"][0]["delta"] for c in chunks]
            expect(status == 200 and events[-1] == "[DONE]" and
                   deltas[0].get("role") == "assistant" and deltas[-1] == {} and
                   "".join(d.get("content", "") for d in deltas) == reply and
                   chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length"),
                   "chat streamed: deltas concatenate to the reply, role first, empty last")
        check_error(server, "chat role unknown", None,
                    {"messages": [{"role": "bot", "content": "hi"}]}, 400, "messages[0]",
                    path="/v1/chat/completions")
        check_error(server, "chat content not a string", None,
                    {"messages": [{"role": "user", "content": [{"type": "text"}]}]}, 400,
                    "messages[0]", path="/v1/chat/completions")
        check_error(server, "chat without messages", None, {"prompt": "hi"}, 400, "prompt",
                    path="/v1/chat/completions")
        check_error(server, "chat empty messages", None, {"messages": []}, 400, "messages",
                    path="/v1/chat/completions")
        check_error(server, "chat over the positions", None,
                    {"messages": [{"role": "user", "content": "x" * 150}]}, 400, "messages",
                    path="/v1/chat/completions")
        check_error(server, "chat with both token limits", None,
                    {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
                     "max_completion_tokens": 2}, 400, "max_completion_tokens",
                    path="/v1/chat/completions")

        # Bad requests: the right status and a JSON error naming the parameter.
        P = "/v1/completions"
        check_error(server, "bad JSON", None, '{"prompt": [1, 2', 400)
        check_error(server, "not an object", None, "[1, 2]", 400)
        check_error(server, "empty body", None, "", 400)
        check_error(server, "max_tokens a string", None, {"prompt": [1], "max_tokens": "5"}, 400,
                    "max_tokens")
        check_error(server, "max_tokens 0", None, {"prompt": [1], "max_tokens": 0}, 400,
                    "max_tokens")
        check_error(server, "prompt id out of range", None, {"prompt": [1, 300]}, 400, "prompt")
        check_error(server, "prompt id negative", None, {"prompt": [-1]}, 400, "prompt")
        check_error(server, "prompt id not an integer", None, {"prompt": [1.5]}, 400, "prompt")
        check_error(server, "prompt over the positions", None, {"prompt": [1] * (l_max + 1)}, 400,
                    "prompt")
        check_error(server, "text prompt over the positions", None, {"prompt": "a" * 200}, 400,
                    "prompt")
        check_error(server, "empty prompt", None, {"prompt": []}, 400, "prompt")
        check_error(server, "no prompt", None, {"max_tokens": 3}, 400, "prompt")
        check_error(server, "prompt an object", None, {"prompt": {"a": 1}}, 400, "prompt")
        check_error(server, "two prompts", None, {"prompt": ["a", "b"]}, 400, "prompt")
        check_error(server, "temperature negative", None, {"prompt": [1], "temperature": -1}, 400,
                    "temperature")
        check_error(server, "temperature a string", None, {"prompt": [1], "temperature": "hot"},
                    400, "temperature")
        check_error(server, "top_k without temperature", None, {"prompt": [1], "top_k": 5}, 400,
                    "top_k")
        check_error(server, "top_p 2", None, {"prompt": [1], "temperature": 1, "top_p": 2}, 400,
                    "top_p")
        check_error(server, "seed negative", None, {"prompt": [1], "seed": -3}, 400, "seed")
        check_error(server, "stream a string", None, {"prompt": [1], "stream": "yes"}, 400,
                    "stream")
        check_error(server, "n 2", None, {"prompt": [1], "n": 2}, 400, "n")
        check_error(server, "unknown parameter", None, {"prompt": [1], "max_token": 2}, 400,
                    "max_token")
        check_error(server, "body over 4 MiB", None, " " * (5 << 20), 413)
        check_error(server, "GET on a POST endpoint", None, None, 405, method="GET")
        check_error(server, "unknown path", None, {"prompt": [1]}, 404, path="/v2/x")
        check_error(server, "embeddings on a decoder", None, {"input": [1]}, 404,
                    path="/v1/embeddings")
        # Garbage on the socket, a body shorter than its Content-Length, a client that leaves
        # mid-stream: the server answers the next request.
        with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
            s.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            reply = s.recv(4096).decode(errors="replace")
        expect(reply.startswith("HTTP/1.1 400"), f"garbage request line: {reply.splitlines()[:1]}")
        with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                      b'{"prompt": [1')
        with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
            body = json.dumps({"prompt": [1, 2], "max_tokens": 75, "stream": True}).encode()
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nContent-Length: " +
                      str(len(body)).encode() + b"\r\n\r\n" + body)
            first = s.recv(256)
        expect(first.startswith(b"HTTP/1.1 200"), "a client that disconnects mid-stream")
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            status, health = server.request("GET", "/health")
            if json.loads(health)["running"] == 0:
                break
            time.sleep(0.05)
        expect(json.loads(health)["running"] == 0,
               f"nothing left running after it: {health.strip()}")
        status, body = server.post("/v1/completions", cases[0][0])
        expect(status == 200 and body["choices"][0]["token_ids"] == cases[0][1],
               "the next request after bad ones is answered")

        # SIGTERM while a request runs (its first event read, so it is running): it completes,
        # then the server exits 0.
        c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
        c.request("POST", "/v1/completions",
                  body=json.dumps({"prompt": [3], "max_tokens": 70, "stream": True}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        text = b""
        while b"\n\n" not in text:
            chunk = r.read1(4096)
            if not chunk:
                break
            text += chunk
        code, err = server.stop()
        text += r.read()
        c.close()
        events = [e[len("data: "):] for e in text.decode().split("\n\n") if e.startswith("data: ")]
        last = json.loads(events[-2]) if len(events) >= 2 else {}
        expect(r.status == 200 and events[-1:] == ["[DONE]"] and
               last.get("usage", {}).get("completion_tokens") == len(events) - 2 and code == 0,
               f"SIGTERM during a streamed request: it completes ({len(events) - 2} tokens), "
               f"exit {code}")
        summary = [x for x in err.splitlines() if "stopped;" in x]
        print("server:", summary[-1] if summary else err.strip()[-300:])
    finally:
        if server.proc.poll() is None:
            server.proc.kill()

    # Bad command lines: exit 2 and one error line, or 1 when the address cannot be used.
    for args, code, msg in [
        (["--serve", "--tokens", "1"], 2, "--serve takes its inputs from HTTP requests"),
        (["--serve", "--port", "70000"], 2, "--port: '70000' is not a port number"),
        (["--port", "0"], 2, "--port needs --serve"),
        (["--serve", "--logits-out", "x.npy"], 2, "--logits-out is not for --serve"),
        (["--serve", "--pool", "cls"], 2, "--pool: model 'gpt2' outputs logits"),
        (["--serve", "--top-k", "3"], 2, "--top-k/--top-p need --temperature > 0"),
        (["--serve", "--chat-template", "chatml"], 2, "--chat-template needs a tokenizer"),
        (["--serve", "--tokenizer", os.path.join(work, "bpe"), "--chat-template", "llama3"], 1,
         "end-of-turn token <|eot_id|> is not a token"),
        (["--serve", "--host", "203.0.113.7", "--port", "0", "--insecure"], 1,
         "--serve: cannot listen on 203.0.113.7:0"),
    ]:
        r = subprocess.run([exe, *weights, *args], capture_output=True, text=True,
                           timeout=TIMEOUT)
        first = (r.stderr.splitlines() or [""])[0]
        expect(r.returncode == code and first.startswith("error: ") and msg in first,
               f"{' '.join(args)}: exit {r.returncode}, {first!r}")


def embeddings(xfc, work):
    exe = os.path.join(work, "minilm")
    run([xfc, os.path.join(ROOT, "examples", "minilm.xf"),
         *[a for kv in MINILM.split(",") for a in ("-D", kv)], "-o", exe])
    vocab = os.path.join(work, "vocab.txt")
    write_wordpiece(vocab)
    weights = ["--random-weights", "9"]
    rng = np.random.default_rng(3)

    def single(args):
        f = os.path.join(work, "e.npy")
        run([exe, *weights, "--vocab", vocab, *args, "--embeddings-out", f, "--normalize"])
        return np.load(f)

    inputs = [[int(x) for x in rng.integers(0, 200, size=n)] for n in (1, 7, 40, 13, 2, 25)]
    texts = ["the cat sat on the mat.", "a dog ran", "hello worlds, hello cats"]
    requests = [
        ({"input": inputs[0]}, single(["--tokens", ",".join(map(str, inputs[0]))])),
        ({"input": inputs[1:4]}, single([a for s in inputs[1:4]
                                         for a in ("--tokens", ",".join(map(str, s)))])),
        ({"input": texts[0]}, single(["--text", texts[0]])),
        ({"input": texts[1:], "model": "minilm", "encoding_format": "float"},
         single([a for t in texts[1:] for a in ("--text", t)])),
        ({"input": inputs[4:]}, single([a for s in inputs[4:]
                                        for a in ("--tokens", ",".join(map(str, s)))])),
    ]
    server = ServerProcess([exe, *weights, "--serve", "--port", "0", "--vocab", vocab,
                            "--normalize", "--batch", "8"])
    try:
        with concurrent.futures.ThreadPoolExecutor(len(requests) * 2) as pool:
            got = list(pool.map(lambda b: server.post("/v1/embeddings", b),
                                [r[0] for r in requests] * 2))
        for k, ((body, want), (status, r)) in enumerate(zip(requests * 2, got)):
            ok = status == 200 and [d["index"] for d in r["data"]] == list(range(len(want)))
            err = float("inf")
            if ok:
                e = np.array([d["embedding"] for d in r["data"]], dtype=np.float32)
                err = np.abs(e - want).max() / np.abs(want).max() if e.shape == want.shape else err
            expect(ok and err <= REORDER_BOUND,
                   f"embeddings request {k % len(requests)} ({len(want)} inputs), "
                   f"{len(got)} concurrent: max|Δ|/max|ref| {err:.1e} <= {REORDER_BOUND}")
        check_error(server, "input over max_positions", None, {"input": [1] * 41}, 400, "input",
                    path="/v1/embeddings")
        check_error(server, "input item of the wrong type", None, {"input": ["a", 3]}, 400,
                    "input[1]", path="/v1/embeddings")
        check_error(server, "empty input list", None, {"input": []}, 400, "input",
                    path="/v1/embeddings")
        check_error(server, "base64 encoding", None, {"input": "a", "encoding_format": "base64"},
                    400, "encoding_format", path="/v1/embeddings")
        check_error(server, "completions on an encoder", None, {"prompt": [1]}, 404)
        code, err = server.stop()
        expect(code == 0, f"embeddings server exits 0 on SIGTERM: "
                          f"{[x for x in err.splitlines() if 'stopped;' in x]}")
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    r = subprocess.run([exe, *weights, "--serve", "--temperature", "1"], capture_output=True,
                       text=True, timeout=TIMEOUT)
    expect(r.returncode == 2 and "are for decoders" in r.stderr.splitlines()[0],
           f"--serve --temperature on an encoder: {r.stderr.splitlines()[0]!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xf-serve-") as tmp:
        completions(args.xfc, args.workdir or tmp)
        embeddings(args.xfc, args.workdir or tmp)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
