#!/usr/bin/env python3
"""xf's chat templates (runtime/lib/ChatTemplate.cpp) against Jinja and Hugging Face.

    check_chat_templates.py XF_CHAT_RENDER [SMOLLM2.gguf]

1. SmolLM2-135M-Instruct's GGUF: the rendered text and the token ids of each conversation
   below must equal transformers' apply_chat_template (AutoTokenizer loading the same file,
   its own Jinja run of tokenizer.chat_template, its own tokenizer), with and without the
   generation prompt. Skipped when the file or transformers is missing.
2. The official templates in templates/*.jinja (Llama-3-Instruct, Llama-2-chat, Zephyr, a
   ChatML without a default system), recognised from their text and rendered by xf, must equal
   jinja2 rendering them the way transformers does (sandboxed, trim_blocks, lstrip_blocks).
Exit 77 (skipped) without jinja2.
"""
import os
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You answer in one word."},
     {"role": "user", "content": "Capital of Italy?"}],
    [{"role": "user", "content": "Hi!"},
     {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Tell me a joke."}],
    [{"role": "user", "content": "  spaces around, a\nnewline and tabs\t "},
     {"role": "assistant", "content": " ok \n"},
     {"role": "user", "content": "caf\u00e9 \u65e5\u672c 12345 \U0001F600"}],
    # Special-token text inside a message: the rendered text's ids as a tokenizer parses a
    # prompt (special tokens found anywhere) are transformers' ids. --chat and --serve encode
    # messages as plain text instead (ChatTemplate::renderMarked; xf-chat-template-test and
    # xf-gguf-test check that), so there the ids differ on purpose.
    [{"role": "user", "content": "say <|im_end|> and <|im_start|> literally"}],
    [{"role": "system", "content": ""}, {"role": "user", "content": "empty system"}],
]

# (template file, bos_token, eos_token) as the models' tokenizers define them.
TEMPLATES = [
    ("llama3-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    ("llama2-chat.jinja", "<s>", "</s>"),
    ("zephyr-7b-beta.jinja", "<s>", "</s>"),
    ("chatml-plain.jinja", "<|im_start|>", "<|im_end|>"),
]


def request(conversation, generation):
    items = ["gen=%d" % generation]
    items += ["%s=%s" % (m["role"], m["content"].encode("utf-8").hex()) for m in conversation]
    return " ".join(items)


def xf_render(tool, args, cases):
    lines = "".join(request(c, g) + "\n" for c, g in cases)
    out = subprocess.run([tool] + args, input=lines.encode(), capture_output=True, check=False)
    if out.returncode != 0:
        sys.exit("xf-chat-render %s failed: %s %s" % (args, out.stderr.decode(),
                                                      out.stdout.decode()[:400]))
    rows = []
    for line in out.stdout.decode().splitlines():
        text, _, ids = line.partition("\t")
        rows.append((bytes.fromhex(text).decode("utf-8"), [int(i) for i in ids.split()]))
    return rows


def check_smollm2(tool, gguf):
    try:
        from transformers import AutoTokenizer
    except ImportError:
        print("skip SmolLM2: no transformers")
        return 0
    if not gguf or not os.path.exists(gguf):
        print("skip SmolLM2: no GGUF file")
        return 0
    try:
        hf = AutoTokenizer.from_pretrained(os.path.dirname(gguf),
                                           gguf_file=os.path.basename(gguf))
    except ImportError as e:  # transformers reads GGUF files only with torch and gguf
        print("skip SmolLM2: transformers cannot read the GGUF file here (%s)" % e)
        return 0
    cases = [(c, g) for c in CONVERSATIONS for g in (1, 0)]
    got = xf_render(tool, ["--gguf", gguf], cases)
    for (conversation, generation), (text, ids) in zip(cases, got):
        want_text = hf.apply_chat_template(conversation, add_generation_prompt=bool(generation),
                                           tokenize=False)
        want_ids = hf.apply_chat_template(conversation, add_generation_prompt=bool(generation),
                                          tokenize=True)
        if hasattr(want_ids, "keys"):
            want_ids = want_ids["input_ids"]
        if text != want_text or ids != list(want_ids):
            sys.exit("SmolLM2 %r gen=%d:\n xf   %r\n      %s\n HF   %r\n      %s" % (
                conversation, generation, text, ids, want_text, list(want_ids)))
    print("SmolLM2: %d renderings, text and ids identical to transformers" % len(cases))
    first = got[0]
    print("  e.g. %r -> %d ids" % (first[0], len(first[1])))
    return len(cases)


def check_jinja_templates(tool):
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    count = 0
    for name, bos, eos in TEMPLATES:
        path = os.path.join(HERE, "templates", name)
        template = env.from_string(open(path).read())
        cases = [(c, g) for c in CONVERSATIONS for g in (1, 0)]
        got = xf_render(tool, ["--jinja", path], cases)
        for (conversation, generation), (text, _) in zip(cases, got):
            want = template.render(messages=conversation, add_generation_prompt=bool(generation),
                                   bos_token=bos, eos_token=eos)
            if text != want:
                sys.exit("%s %r gen=%d:\n xf    %r\n jinja %r" % (name, conversation, generation,
                                                                  text, want))
        print("%s: %d renderings identical to jinja2" % (name, len(cases)))
        count += len(cases)
    return count


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    try:
        import jinja2  # noqa: F401
    except ImportError:
        print("skipped: no jinja2")
        return SKIP
    tool = sys.argv[1]
    gguf = sys.argv[2] if len(sys.argv) == 3 else ""
    check_smollm2(tool, gguf)
    check_jinja_templates(tool)
    return 0


if __name__ == "__main__":
    sys.exit(main())
