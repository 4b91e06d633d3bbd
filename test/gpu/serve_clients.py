#!/usr/bin/env python3
"""Concurrent clients against `EXE --serve` (docs/serving.md), for a CUDA build.

Starts the server command given after `--` with `--serve --port 0` added, waits for its address
line, then runs --clients concurrent clients, each sending --requests greedy completions of
--max-tokens tokens (prompts of --prompt-tokens ids, different per client and request), and
writes a JSON summary: every response's status and ids, the aggregate tokens/s over the wall
time of all requests, and the server's stderr. Exit 1 if a request failed, got another count of
tokens than asked, or the server did not exit 0 after SIGTERM. No timing is asserted.

Used by test/Gpu/serve.test (against the stand-in driver: ids meaningless, counts checked) and
by the GPU harness's `batch` phase (replay.sh; compare_bundle.py checks the ids against the
CPU build's and reports the tokens/s).

usage: serve_clients.py --out summary.json [--clients 16] [--requests 1] [--max-tokens 32]
                        [--prompt-tokens 8] [--vocab 50257] [--timeout 300] -- EXE ARGS...
"""

import argparse
import concurrent.futures
import http.client
import json
import signal
import subprocess
import sys
import time


def start(cmd, timeout):
    proc = subprocess.Popen(cmd + ["--serve", "--port", "0"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    seen, deadline = "", time.time() + timeout
    while time.time() < deadline:
        line = proc.stderr.readline()
        seen += line
        if "http://" in line:
            return proc, int(line.split("http://")[1].split(":")[1].split()[0]), seen
        if not line and proc.poll() is not None:
            break
    proc.kill()
    sys.exit(f"FAIL: the server did not start: {seen.strip()}")


def prompt(client, request, n, vocab):
    return [(client * 131 + request * 17 + k * 7 + 1) % vocab for k in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--prompt-tokens", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        sys.exit("usage: serve_clients.py --out FILE [options] -- EXE ARGS...")
    proc, port, head = start(cmd, a.timeout)

    def ask(job):
        client, request = job
        ids = prompt(client, request, a.prompt_tokens, a.vocab)
        body = {"prompt": ids, "max_tokens": a.max_tokens, "temperature": 0}
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=a.timeout)
        try:
            c.request("POST", "/v1/completions", body=json.dumps(body),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            text = r.read().decode()
        except OSError as e:
            return {"client": client, "request": request, "prompt": ids, "status": 0,
                    "error": str(e)}
        finally:
            c.close()
        out = {"client": client, "request": request, "prompt": ids, "status": r.status}
        if r.status == 200:
            out["ids"] = json.loads(text)["choices"][0]["token_ids"]
        else:
            out["error"] = text[:500]
        return out

    jobs = [(c, k) for c in range(a.clients) for k in range(a.requests)]
    began = time.time()
    with concurrent.futures.ThreadPoolExecutor(a.clients) as pool:
        # Each client sends its requests one after another.
        per_client = [pool.submit(lambda c=c: [ask((c, k)) for k in range(a.requests)])
                      for c in range(a.clients)]
        results = [r for f in per_client for r in f.result()]
    seconds = time.time() - began
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=a.timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    tokens = sum(len(r.get("ids", [])) for r in results)
    good = all(r["status"] == 200 and len(r["ids"]) == a.max_tokens for r in results)
    summary = {"clients": a.clients, "requests": len(jobs), "max_tokens": a.max_tokens,
               "prompt_tokens": a.prompt_tokens, "seconds": seconds, "tokens": tokens,
               "tokens_per_s": tokens / seconds if seconds > 0 else None,
               "all_ok": good, "server_exit": proc.returncode, "results": results,
               "stderr": head + err}
    with open(a.out, "w") as f:
        json.dump(summary, f)
    print(f"{len(jobs)} requests from {a.clients} clients: {tokens} tokens in {seconds:.2f} s "
          f"({summary['tokens_per_s']:.0f} tokens/s); all ok: {good}; "
          f"server exit {proc.returncode}")
    return 0 if good and proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
